"""The report as sections over one context (``pelab.report.context.ReportContext``).

Each module is one section: ``section(ctx) -> list[str]`` of markdown lines, drawing its figures into
``ctx.figures_dir`` (each figure's file name is a constant of its module, used once to draw and once to
link). Computations live in ``pelab.analysis``, drawing in ``pelab.report.*_figures``. A section returns
nothing when its task is not in the study.
"""

from __future__ import annotations

from collections.abc import Callable

from pelab.report.context import ReportContext
from pelab.report.sections import (
    analyses,
    attention,
    copy,
    curves,
    distance_decay,
    invariants,
    learned_trajectory,
    length,
    position_tables,
    shift_property,
    similarity,
    translation,
    translation_analyses,
)


def _copy_only(section: Callable[[ReportContext], list[str]]) -> Callable[[ReportContext], list[str]]:
    return lambda ctx: section(ctx) if ctx.has_task("copy") else []


# In report order.
SECTIONS: list[Callable[[ReportContext], list[str]]] = [
    copy.section,
    analyses.intro,
    *(_copy_only(m.section) for m in (position_tables, similarity, learned_trajectory, distance_decay,
                                       shift_property, invariants, attention, curves)),
    translation_analyses.section,
    analyses.anchors,
    translation.section,
    length.section,
]
