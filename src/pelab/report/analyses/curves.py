"""Training and validation loss curves of the copy task."""

from __future__ import annotations

from pelab.report.common import mean_sd_sci
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import draw_curves
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    histories = ctx.curves[ctx.curves["task"] == "copy"]
    last = histories[histories["step"] == histories["step"].max()]
    draw_curves(histories, ctx.schemes_of("copy"), [("loss", "training loss (batch mean)"),
                                         ("val_loss", "validation loss (held-out training sequences)")],
                ctx.figure("copy_loss_curves.png"), log=True, sharey=True, ylabel="cross-entropy per token",
                title="Copy task: mean over seeds, band = min–max over seeds")
    final = {s: last[last["pe"] == s].sort_values("seed") for s in ctx.schemes_of("copy")}
    val = {s: summarize(f["val_loss"].tolist()) for s, f in final.items()}
    gap = {s: summarize((f["val_loss"] - f["loss"]).tolist())["mean"] for s, f in final.items()}
    best, worst = min(val, key=lambda s: val[s]["mean"]), max(val, key=lambda s: val[s]["mean"])
    widest = max(gap, key=gap.get)
    return render("curves.md", step=int(last["step"].max()), best=best, best_loss=mean_sd_sci(val[best]), worst=worst,
                  worst_loss=mean_sd_sci(val[worst]), widest=widest, gap=gap[widest], image=ctx.image)
