"""Constant norm of sinusoidal rows and relative-only RoPE scores."""

from __future__ import annotations

import math

import torch

from pelab.analysis import norms
from pelab.report.context import ReportContext
from pelab.report.sections._shared import (
    NOTEBOOK_DIM,
    NOTEBOOK_LENGTH,
    sci,
    sinusoidal_base,
)
from pelab.report.tables import markdown_table

NORM_MEASURE = "largest abs(‖PE(t)‖ − √(d/2)) over t"
ROPE_MEASURE = "largest (max − min) of the scores along n − m = const, over the largest abs(score)"


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Constant norm of sinusoidal rows (notes on positional encoding), relative-only RoPE scores "
             "(sinusoidal and rotary post)", ""]
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, long = sinusoidal_base(ctx), ctx.copy.data.long_context
    rows, worst = [], {}
    for dtype in (torch.float64, torch.float32):
        name = str(dtype).removeprefix("torch.")
        measured = [
            (f"‖PE(t)‖ = √(d/2) = {math.sqrt(d / 2):.3f}", f"t < {long}, d = {d}",
             norms.sinusoidal_norm_deviation(long, d, base, dtype), NORM_MEASURE),
            (f"‖PE(t)‖ = √(d/2) = {math.sqrt(NOTEBOOK_DIM / 2):.3f}", f"t < {NOTEBOOK_LENGTH}, d = {NOTEBOOK_DIM}",
             norms.sinusoidal_norm_deviation(NOTEBOOK_LENGTH, NOTEBOOK_DIM, base, dtype), NORM_MEASURE),
            ("⟨R_m q, R_n k⟩ depends on n − m only", f"m, n < {long}, head dim {h}, 8 random (q, k)",
             norms.rope_relative_deviation(long, h, base, dtype), ROPE_MEASURE),
        ]
        rows += [[claim, setting, name, sci(value), measure] for claim, setting, value, measure in measured]
        worst[name] = max(value for _, _, value, _ in measured)
    holds = worst["float64"] < 1e-12 and worst["float32"] < 1e-5
    reading = (
        "The notes' constant-norm property and the RoFormer relative-position property, measured on the tables and "
        f"rotations the models use (`pelab.positional.functional`). The largest deviation is {sci(worst['float64'])} "
        f"in float64 and {sci(worst['float32'])} in float32"
        + (": both properties hold to rounding." if holds else ": larger than rounding — a property is violated.")
    )
    header = ["property", "setting", "dtype", "max deviation", "measured as"]
    return lines + [reading, "", markdown_table(header, rows), ""]
