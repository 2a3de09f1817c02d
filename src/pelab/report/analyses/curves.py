"""Training and held-out loss curves of the copy task."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pelab.report.common import mean_sd_sci
from pelab.report.context import ReportContext
from pelab.report.style import save, scheme_palette
from pelab.stats import summarize


def _histories(ctx: ReportContext) -> pd.DataFrame:
    return ctx.curves[ctx.curves["task"] == "copy"]


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Training and held-out curves", ""]
    plots = ("`dvc plots show` and `dvc plots diff main <experiment>` overlay the per-scheme means of "
             "`reports/plots/copy_train_loss.csv` and `copy_test_loss.csv` with the `overlay_schemes` template "
             "(colour = scheme, dash = revision).")
    histories = _histories(ctx)
    last = histories[histories["step"] == histories["step"].max()]
    draw_loss_curves(histories, ctx.schemes, ctx.figure("copy_loss_curves.png"))
    final = {s: last[last["pe"] == s].sort_values("seed") for s in ctx.schemes}
    val = {s: summarize(f["test_loss"].tolist()) for s, f in final.items()}
    gap = {s: summarize((f["test_loss"] - f["loss"]).tolist())["mean"] for s, f in final.items()}
    best, worst = min(val, key=lambda s: val[s]["mean"]), max(val, key=lambda s: val[s]["mean"])
    widest = max(gap, key=gap.get)
    reading = (
        f"Mean over seeds, band = min–max. At the last step (step {int(last['step'].max())}) the held-out loss is "
        f"lowest for `{best}` ({mean_sd_sci(val[best])}) and highest for `{worst}` ({mean_sd_sci(val[worst])}); "
        f"the largest gap between held-out and training loss is `{widest}`'s ({gap[widest]:+.1e}). The training "
        "loss is the mean over the last logged steps' batches, the held-out loss is on the first 256 sequences of "
        "the test split (the copy data has no validation split; no choice in training reads this curve). " + plots
    )
    return lines + [reading, "", ctx.image("training and held-out loss", "copy_loss_curves.png"), ""]


def draw_loss_curves(histories: pd.DataFrame, schemes: list[str], path: Path) -> Path:
    """Training and held-out loss per scheme from per-seed histories (columns pe, seed, step, loss, test_loss):
    mean over seeds, band = min–max over seeds, log scale."""
    palette = scheme_palette()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = (("loss", "training loss (batch mean)"), ("test_loss", "held-out loss (test split)"))
    for ax, (column, title) in zip(axes, panels):
        for scheme in schemes:
            sel = histories[histories["pe"] == scheme].dropna(subset=[column])
            stats = sel.groupby("step")[column].agg(["mean", "min", "max"]).reset_index()
            ax.plot(stats["step"], stats["mean"], label=scheme, color=palette[scheme], lw=1.4)
            ax.fill_between(stats["step"], stats["min"], stats["max"], color=palette[scheme], alpha=0.15)
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("cross-entropy per token")
    axes[1].legend(fontsize=8, ncol=2)
    fig.suptitle("Copy task: mean over seeds, band = min–max over seeds", fontsize=11)
    fig.tight_layout()
    return save(fig, path)
