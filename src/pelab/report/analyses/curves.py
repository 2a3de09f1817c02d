"""Training and held-out loss curves of the copy task."""

from __future__ import annotations

import pandas as pd

from pelab.report.common import mean_sd_sci
from pelab.report.context import ReportContext
from pelab.report.style import draw_curves
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
    draw_curves(histories, ctx.schemes, [("loss", "training loss (batch mean)"),
                                         ("test_loss", "held-out loss (test split)")],
                ctx.figure("copy_loss_curves.png"), log=True, sharey=True, ylabel="cross-entropy per token",
                title="Copy task: mean over seeds, band = min–max over seeds")
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
