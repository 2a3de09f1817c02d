"""Which step is scored: each (task, scheme)'s chosen steps over seeds, its validation loss there and at the last
step, and the schemes flagged as still improving or overfitting (``pelab.analysis.selection``)."""

from __future__ import annotations

import statistics

from pelab.analysis.selection import OVERFIT_MARGIN, selection
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.tables import markdown_table
from pelab.stats import summarize


def _loss(values: list[float]) -> str:
    s = summarize(values)
    return f"{s['mean']:.4f}" + (f" ± {s['sd']:.4f}" if len(values) > 1 else "")


def section(ctx: ReportContext) -> list[str]:
    params, rows, improving, overfitting = ctx.params, [], [], []
    for task in params.tasks:  # every study's, in record order
        for scheme in params.schemes_of(task):
            chosen = selection(ctx.records, task, scheme)
            if chosen is None:
                continue
            n = len(chosen.best_steps)
            rows.append([task, f"`{scheme}`", f"{statistics.median(chosen.best_steps):g} "
                         f"({min(chosen.best_steps)}–{max(chosen.best_steps)}) of {chosen.steps}",
                         _loss(chosen.best_loss), _loss(chosen.last_loss),
                         f"{chosen.improving}/{n}", f"{chosen.overfitting}/{n}"])
            if chosen.improving:
                improving.append(f"{task} `{scheme}` ({chosen.improving}/{n})")
            if chosen.overfitting:
                overfitting.append(f"{task} `{scheme}` ({chosen.overfitting}/{n})")
    if not rows:
        return []
    table = markdown_table(["task", "scheme", "scored step: median (min–max)", "validation loss there",
                            "at the last step", "still improving", "overfitting"], rows)
    return render("selection.md", table=table, improving=improving, overfitting=overfitting,
                  margin=f"{OVERFIT_MARGIN:.0%}")
