"""Length-study figures: accuracy at every length, one panel per task, training range shaded."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pelab.report.style import save, scheme_palette

METRIC_LABELS = {"token_accuracy": "token accuracy of the answer", "exact_match": "exact match of the answer"}


def accuracy_by_length(records: pd.DataFrame, tasks: list[str], schemes: list[str], train_max: dict[str, int],
                       chance: dict[str, float], metric: str, path: Path) -> Path:
    """Per task a panel: mean over seeds per length (line) with the seeds' min–max (band); lengths 1..N shaded;
    chance level dotted (token accuracy only)."""
    palette = scheme_palette()
    for variant in ("+PI", "+NTK"):  # RoPE's evaluation-time extensions: RoPE's colour, dashed / dotted
        palette[f"rope{variant}"] = palette["rope"]
    styles = {"rope+PI": "--", "rope+NTK": ":"}
    cols = 2 if len(tasks) > 1 else 1
    n_rows = (len(tasks) + cols - 1) // cols
    fig, axes = plt.subplots(n_rows, cols, figsize=(6.2 * cols, 3.3 * n_rows), squeeze=False, sharey=True)
    rows = records[(records["split"] == "test") & (records["metric"] == metric) & (records["length"] != "all")]
    rows = rows.assign(length=rows["length"].astype(int))
    for ax, task in zip(axes.flat, tasks):
        ax.axvspan(0.5, train_max[task] + 0.5, color="0.9", zorder=0)
        ax.text(0.7, 1.06, "trained lengths", fontsize=8, color="0.35", va="bottom")
        for scheme in schemes:
            sel = rows[(rows["task"] == task) & (rows["pe"] == scheme)]
            if sel.empty:
                continue
            band = sel.groupby("length")["value"].agg(["mean", "min", "max"]).reset_index()
            ax.plot(band["length"], band["mean"], color=palette[scheme], lw=1.6, label=scheme,
                    ls=styles.get(scheme, "-"))
            ax.fill_between(band["length"], band["min"], band["max"], color=palette[scheme], alpha=0.15, lw=0)
        if metric == "token_accuracy" and task in chance:
            ax.axhline(chance[task], color="0.4", ls=":", lw=1)
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("input length n")
        ax.set_ylim(-0.03, 1.12)
        ax.set_xlim(0.5, rows[rows["task"] == task]["length"].max() + 0.5)
    for ax in axes[:, 0]:
        ax.set_ylabel(METRIC_LABELS[metric])
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 8), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    fig.suptitle(f"Length generalisation: {METRIC_LABELS[metric]} (line = mean over seeds, band = min–max; "
                 "grey = training lengths" + (", dotted = chance)" if metric == "token_accuracy" else ")"),
                 fontsize=10, y=1.04)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return save(fig, path)
