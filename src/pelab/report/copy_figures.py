"""Copy-task figures: accuracy per scheme with every seed, accuracy by length, training curves."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pelab.report.style import save, scheme_palette
from pelab.stats import summarize

SPLIT_TITLES = {"test": "held-out test (training lengths)", "test_long": "longer than training"}
METRIC_TITLES = {"exact_match": "exact match", "token_accuracy": "token accuracy (copied part)"}


def accuracy_by_scheme(records: pd.DataFrame, schemes: list[str], path: Path) -> Path:
    """Every seed as a point, mean as a bar tick and the 95% t-interval as an error bar."""
    palette = scheme_palette()
    overall = records[(records["task"] == "copy") & (records["length"] == "all")]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharey=True)
    for row, split in enumerate(SPLIT_TITLES):
        for col, metric in enumerate(METRIC_TITLES):
            ax = axes[row, col]
            for x, scheme in enumerate(schemes):
                values = overall[(overall["pe"] == scheme) & (overall["split"] == split) & (overall["metric"] == metric)]
                values = values.sort_values("seed")["value"].tolist()
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


def accuracy_by_length(records: pd.DataFrame, schemes: list[str], path: Path) -> Path:
    """Mean exact match and token accuracy per input length, training lengths and beyond."""
    palette = scheme_palette()
    rows = records[(records["task"] == "copy") & (records["length"] != "all") & records["split"].isin(SPLIT_TITLES)]
    rows = rows.assign(length=rows["length"].astype(int))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, metric in zip(axes, METRIC_TITLES):
        for scheme in schemes:
            sel = rows[(rows["pe"] == scheme) & (rows["metric"] == metric)]
            curve = sel.groupby("length")["value"].agg(["mean", "std"]).reset_index()
            ax.plot(curve["length"], curve["mean"], marker="o", ms=3, label=scheme, color=palette[scheme])
            ax.fill_between(curve["length"], curve["mean"] - curve["std"].fillna(0), curve["mean"] + curve["std"].fillna(0),
                            color=palette[scheme], alpha=0.12)
        train_max = rows[rows["split"] == "test"]["length"].max()
        ax.axvline(train_max + 0.5, color="grey", ls="--", lw=1)
        ax.text(train_max + 0.6, 0.5, "longer than\ntraining →", fontsize=8, color="grey")
        ax.set_xlabel("digits before <copy>")
        ax.set_title(METRIC_TITLES[metric], fontsize=10)
        ax.set_ylim(-0.03, 1.03)
    axes[0].set_ylabel("accuracy (mean over seeds ± sd)")
    axes[1].legend(fontsize=8, loc="upper right", ncol=2)
    fig.tight_layout()
    return save(fig, path)


def training_curves(curves: pd.DataFrame, schemes: list[str], task: str, path: Path, value: str = "loss") -> Path:
    """Mean over seeds with a min–max band, log-scale loss."""
    palette = scheme_palette()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = curves[curves["task"] == task]
    for scheme in schemes:
        sel = data[data["pe"] == scheme].groupby("step")[value].agg(["mean", "min", "max"]).reset_index()
        ax.plot(sel["step"], sel["mean"], label=scheme, color=palette[scheme], lw=1.4)
        ax.fill_between(sel["step"], sel["min"], sel["max"], color=palette[scheme], alpha=0.15)
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel(f"training {value} (mean over seeds, band = min–max)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return save(fig, path)
