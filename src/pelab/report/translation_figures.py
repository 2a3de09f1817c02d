"""Translation figures: BLEU by source-length bucket, training and validation loss curves."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pelab.report.style import save, scheme_palette

TASK = "translation"


def bleu_by_length(
    records: pd.DataFrame, schemes: list[str], splits: list[str], buckets: list[str], path: Path,
    metric: str = "bleu_beam",
) -> Path:
    """Corpus BLEU of each source-length bucket: mean over seeds ± sd, one line per scheme, a panel per split."""
    palette = scheme_palette()
    rows = records[(records["task"] == TASK) & (records["metric"] == metric) & records["length"].isin(buckets)]
    fig, axes = plt.subplots(1, len(splits), figsize=(5.5 * len(splits), 4), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        for offset, scheme in enumerate(schemes):
            sel = rows[(rows["pe"] == scheme) & (rows["split"] == split)]
            stats = sel.groupby("length")["value"].agg(["mean", "std"]).reindex(buckets)
            x = [i + 0.06 * (offset - (len(schemes) - 1) / 2) for i in range(len(buckets))]
            ax.errorbar(x, stats["mean"], yerr=stats["std"].fillna(0), marker="o", ms=4, capsize=3, lw=1.2,
                        label=scheme, color=palette[scheme])
        ax.set_xticks(range(len(buckets)), buckets)
        ax.set_xlabel("source length (French words)")
        ax.set_title(split, fontsize=10)
    axes[0][0].set_ylabel(f"sacreBLEU, {metric.split('_')[-1]} search (mean ± sd over seeds)")
    axes[0][-1].legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return save(fig, path)


def loss_curves(curves: pd.DataFrame, schemes: list[str], path: Path) -> Path:
    """Training loss (label-smoothed) and validation cross-entropy: mean over seeds, band = min–max."""
    palette = scheme_palette()
    data = curves[curves["task"] == TASK]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (("loss", "training loss (label-smoothed)"), ("val_loss", "validation cross-entropy per token"))
    for ax, (column, title) in zip(axes, panels):
        for scheme in schemes:
            sel = data[data["pe"] == scheme].dropna(subset=[column])
            stats = sel.groupby("step")[column].agg(["mean", "min", "max"]).reset_index()
            ax.plot(stats["step"], stats["mean"], label=scheme, color=palette[scheme], lw=1.4)
            ax.fill_between(stats["step"], stats["min"], stats["max"], color=palette[scheme], alpha=0.15)
        ax.set_xlabel("training step")
        ax.set_title(title, fontsize=10)
    axes[1].legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return save(fig, path)
