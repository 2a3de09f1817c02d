"""The references' analyses, reproduced from the pipeline's trained models: one module per analysis, each holding
its figure and the values its template (``report/templates``) is filled with (``section(ctx) -> list[str]`` of
markdown lines, empty when its task is not in the study); the numbers come from ``pelab.analysis``."""

from __future__ import annotations

from pelab.report.context import ReportContext
from pelab.report.render import render


def intro(ctx: ReportContext) -> list[str]:
    return render("analyses.md", seed=ctx.seed, n=len(ctx.seeds)) if ctx.has_task("copy") else []
