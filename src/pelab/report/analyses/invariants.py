"""Constant norm of sinusoidal rows (notes on positional encoding) and relative-only RoPE scores, measured
(``pelab.analysis.invariants``)."""

from __future__ import annotations

import math

import torch

from pelab.analysis.invariants import rope_relative_deviation, sinusoidal_norm_deviation
from pelab.report.common import NOTEBOOK_DIM, NOTEBOOK_LENGTH, sci, sinusoidal_base
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.tables import markdown_table

NORM_MEASURE = "largest abs(‖PE(t)‖ − √(d/2)) over t"
ROPE_MEASURE = "largest (max − min) of the scores along n − m = const, over the largest abs(score)"


def section(ctx: ReportContext) -> list[str]:
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, long = sinusoidal_base(ctx), ctx.copy.data.long_context
    rows, worst = [], {}
    for dtype in (torch.float64, torch.float32):
        name = str(dtype).removeprefix("torch.")
        measured = [
            (f"‖PE(t)‖ = √(d/2) = {math.sqrt(d / 2):.3f}", f"t < {long}, d = {d}",
             sinusoidal_norm_deviation(long, d, base, dtype), NORM_MEASURE),
            (f"‖PE(t)‖ = √(d/2) = {math.sqrt(NOTEBOOK_DIM / 2):.3f}", f"t < {NOTEBOOK_LENGTH}, d = {NOTEBOOK_DIM}",
             sinusoidal_norm_deviation(NOTEBOOK_LENGTH, NOTEBOOK_DIM, base, dtype), NORM_MEASURE),
            ("⟨R_m q, R_n k⟩ depends on n − m only", f"m, n < {long}, head dim {h}, 8 random (q, k)",
             rope_relative_deviation(long, h, base, dtype), ROPE_MEASURE),
        ]
        rows += [[claim, setting, name, sci(value), measure] for claim, setting, value, measure in measured]
        worst[name] = max(value for _, _, value, _ in measured)
    header = ["property", "setting", "dtype", "max deviation", "measured as"]
    return render("invariants.md", worst64=sci(worst["float64"]), worst32=sci(worst["float32"]),
                  holds=worst["float64"] < 1e-12 and worst["float32"] < 1e-5, table=markdown_table(header, rows))
