"""The analyses part of the report: an introduction, then the copy-task analyses and the anchors."""

from __future__ import annotations

from pelab.report.anchors import anchors_table
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


def anchors(ctx: ReportContext) -> list[str]:
    if not ctx.has_task("copy"):
        return []
    return [
        "### Anchors: our numbers beside published ones",
        "",
        anchors_table(ctx.records, {"context": ctx.copy.data.context, "n_layers": ctx.copy.model.n_layers,
                                    "d_model": ctx.copy.model.d_model}),
        "",
    ]
