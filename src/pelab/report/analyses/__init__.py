"""The references' analyses, reproduced from the pipeline's trained models: one module per analysis, each holding
its computation, its figure and its prose (``section(ctx) -> list[str]`` of markdown lines, empty when its task is
not in the study). ``learned_table`` holds what several of them compute on the learned tables."""

from __future__ import annotations

from pelab.report.context import ReportContext


def intro(ctx: ReportContext) -> list[str]:
    if not ctx.has_task("copy"):
        return []
    return [
        "## The references' analyses, reproduced",
        "",
        f"Each analysis of the reference documents, recomputed from this pipeline's trained models. Figures "
        f"of a single model show seed {ctx.seed}; numbers marked with n are over all {len(ctx.seeds)} seeds "
        "(mean ± sd, Student-t 95% interval). The copy-task post's accuracy comparison, with every seed visible, "
        "is the first figure of the copy section above.",
        "",
    ]
