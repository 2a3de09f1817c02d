"""The copy study's section of the report: accuracy per scheme and per length, the paired comparisons against the
reference, cost, and the choices each scheme states about itself (its training curves: ``analyses/curves.py``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pelab.analysis.paired import best_scheme, seed_summary, seed_values
from pelab.positional import Usage, is_control
from pelab.report.common import scheme_choices
from pelab.report.context import ReportContext
from pelab.report.render import fill, render
from pelab.report.style import draw_by_length, save, scheme_palette
from pelab.report.tables import comparison_table, cost_table, difference_matrix, markdown_table
from pelab.stats import summarize

COPY_COLUMNS = [
    ("test", "exact_match", "exact match"),
    ("test", "token_accuracy", "token acc."),
    ("test_long", "exact_match", "exact match, longer"),
    ("test_long", "token_accuracy", "token acc., longer"),
]


def copy_reading(records: pd.DataFrame, schemes: list[str]) -> str:
    """Sentences written from the numbers: who solves the task, who fails, who extrapolates."""
    def mean(scheme: str, split: str, metric: str = "exact_match") -> float:
        return seed_summary(records, "copy", scheme, split, metric)["mean"]

    best_long = best_scheme(records, "copy", schemes, "test_long", "token_accuracy")
    return fill("copy_reading.md", n=len(schemes), best_long=best_long,
                solved=[f"`{s}` ({mean(s, 'test'):.3f})" for s in schemes if mean(s, "test") >= 0.99],
                failed=[f"`{s}` ({mean(s, 'test'):.3f})" for s in schemes if mean(s, "test") < 0.5],
                controls=[(s, mean(s, "test", "token_accuracy")) for s in schemes if is_control(s)],
                best_accuracy=mean(best_long, "test_long", "token_accuracy"),
                best_exact=max(mean(s, "test_long") for s in schemes))


ACCURACY, BY_LENGTH = "copy_accuracy.png", "copy_accuracy_by_length.png"


def _n_per_length(ctx: ReportContext) -> str:
    """Sequences per length in each split of the prepared data (what the per-length numbers average over), as the
    copy evaluation recorded them (split ``data``): a table, or "" where none was recorded."""
    counts = ctx.records[(ctx.records["task"] == "copy") & (ctx.records["split"] == "data")]
    if counts.empty:
        return ""
    counts = counts[(counts["pe"] == counts["pe"].iloc[0]) & (counts["seed"] == counts["seed"].iloc[0])]  # one run
    table = counts.pivot_table(index="length", columns="metric", values="value", aggfunc="first")
    table.index = table.index.astype(int)
    columns = [f"sequences_{split}" for split in ("train", "test", "test_long")]
    table = table.reindex(columns=columns).fillna(0).astype(int)
    rows = [[str(n), *(str(v) for v in table.loc[n])] for n in sorted(table.index)]
    return markdown_table(["length L", "train", "held-out test", "longer test"], rows)


def choices(ctx: ReportContext, task: str, max_offset: int, longest_row: int,
            long_offsets: range | None = None, longest_eval: int | None = None) -> str:
    """The options that could favour one scheme, each stated by the scheme itself (``describe``), as one paragraph
    ("" where no scheme has one). ``longest_row``: the most positions a training row of the task has."""
    usage = Usage(task, longest_row, longest_eval or longest_row, range(1, max_offset + 1), long_offsets)
    lines = scheme_choices(ctx, task, ctx.schemes_of(task), usage)
    return "**Choices that could favour a scheme.** " + " ".join(lines) if lines else ""


def section(ctx: ReportContext) -> list[str]:
    if not ctx.has_task("copy"):
        return []
    records, schemes, copy = ctx.records, ctx.schemes_of("copy"), ctx.copy
    draw_accuracy_by_scheme(records, schemes, ctx.figure(ACCURACY))
    rows = records[(records["task"] == "copy") & (records["length"] != "all") & records["split"].isin(SPLIT_TITLES)]
    rows = rows.assign(length=rows["length"].astype(int))
    draw_by_length({title: rows[rows["metric"] == metric] for metric, title in METRIC_TITLES.items()}, schemes,
                   dict.fromkeys(METRIC_TITLES.values(), copy.data.max_len), ctx.figure(BY_LENGTH),
                   xlabel="digits before <copy>", ylabel="accuracy", title="Copy task by length (line = mean over "
                   "seeds, band = min–max; grey = training lengths)")
    table, _ = comparison_table(records, "copy", schemes, COPY_COLUMNS, reference=ctx.params.reference)
    devices = {s: ctx.run_meta("copy", s, ctx.seed)["cost"]["device"] for s in schemes}
    return render(
        "copy.md", data=copy.data, model=copy.model, train=copy.train, per_length=_n_per_length(ctx),
        choices=choices(ctx, "copy", copy.data.max_len + 1, copy.data.context,
                        range(copy.data.long_min_len + 1, copy.data.long_max_len + 2), copy.data.long_context),
        table=table, reading=copy_reading(records, schemes),
        matrix=difference_matrix(records, "copy", schemes, "test", "exact_match"), image=ctx.image,
        accuracy=ACCURACY, by_length=BY_LENGTH, cost=cost_table(records, "copy", schemes, devices))


SPLIT_TITLES = {"test": "held-out test (training lengths)", "test_long": "longer than training"}
METRIC_TITLES = {"exact_match": "exact match", "token_accuracy": "token accuracy (copied part)"}


def draw_accuracy_by_scheme(records: pd.DataFrame, schemes: list[str], path: Path) -> Path:
    """Every seed as a point, mean as a bar tick and the 95% t-interval as an error bar."""
    palette = scheme_palette()
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharey=True)
    for row, split in enumerate(SPLIT_TITLES):
        for col, metric in enumerate(METRIC_TITLES):
            ax = axes[row, col]
            for x, scheme in enumerate(schemes):
                values = seed_values(records, "copy", scheme, split, metric)
                s = summarize(values)
                jitter = [x + 0.08 * (i - (len(values) - 1) / 2) for i in range(len(values))]
                ax.scatter(jitter, values, s=18, color=palette[scheme], alpha=0.75, zorder=3)
                err = None if len(values) < 2 else [[s["mean"] - s["ci_low"]], [s["ci_high"] - s["mean"]]]
                ax.errorbar([x + 0.3], [s["mean"]], yerr=err, fmt="D", color="black", ms=5, capsize=4, zorder=4)
            ax.set_xticks(range(len(schemes)), schemes, rotation=30, ha="right")
            ax.set_ylim(-0.03, 1.03)
            ax.set_title(f"{METRIC_TITLES[metric]} — {SPLIT_TITLES[split]}", fontsize=10)
            if col == 0:
                ax.set_ylabel("accuracy")
    fig.suptitle("Copy task: dots = seeds, diamond = mean with 95% t-interval", fontsize=11)
    fig.tight_layout()
    return save(fig, path)
