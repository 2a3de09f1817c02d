"""The linear shift property of the sinusoidal table (linear-shift notebook)."""

from __future__ import annotations

import numpy as np
import torch

from pelab.analysis import shift_property
from pelab.positional.functional import sinusoidal_table
from pelab.report import analysis_figures as figures
from pelab.report.context import ReportContext
from pelab.report.sections._shared import (
    NOTEBOOK_DIM,
    NOTEBOOK_LENGTH,
    NOTEBOOK_PHI,
    sci,
    sinusoidal_base,
)
from pelab.report.tables import markdown_table


def section(ctx: ReportContext) -> list[str]:
    lines = ["### The linear shift property of the sinusoidal table (linear-shift notebook)", ""]
    length, dim, phi = NOTEBOOK_LENGTH, NOTEBOOK_DIM, NOTEBOOK_PHI
    base = sinusoidal_base(ctx)
    table = sinusoidal_table(torch.arange(length, dtype=torch.float64), dim, base)
    matrix = shift_property.shift_matrix(dim, phi, base)
    figures.shift_property(table.numpy(), shift_property.shift_block_matrix(table, phi, base).numpy(), matrix.numpy(),
                           phi, ctx.figure("shift_property.png"))
    d, long, c = ctx.copy.model.d_model, ctx.copy.data.long_context, ctx.copy.data.context
    settings = [
        (f"notebook: {length} positions, d = {dim}, φ = {phi}", length, dim, phi),
        (f"our model: {long} positions, d = {d}, φ = {c}", long, d, c),
    ]
    errors = {(label, dtype): shift_property.shift_errors(n, dm, p, base, dtype)
              for label, n, dm, p in settings for dtype in (torch.float64, torch.float32)}
    header = ["way"] + [f"{label}, {str(dtype).removeprefix('torch.')}" for label, *_ in settings
                        for dtype in (torch.float64, torch.float32)]
    rows = [[way] + [sci(errors[(label, dtype)][way]) for label, *_ in settings
                     for dtype in (torch.float64, torch.float32)] for way in shift_property.SHIFT_WAYS]
    f64 = errors[(settings[0][0], torch.float64)]
    f32 = errors[(settings[0][0], torch.float32)]
    worst64 = max(f64, key=f64.get)
    reading = (
        "PE(t + φ) = M(φ)·PE(t) with M(φ) block-diagonal, one 2×2 rotation by w_k·φ per frequency. The four "
        "ways of the notebook "
        + ("give the same shifted table" if f64[worst64] < 1e-10 else "do not all reproduce the shifted table")
        + ": in float64 the largest error against the directly "
        f"computed PE(t + φ) is {sci(f64[worst64])} ({worst64}), at the level of rounding in sin/cos of angles up to "
        f"{length + phi - 1} rad. In float32 it is {sci(max(f32.values()))} at the notebook's size — the "
        f"directly computed table itself is only that accurate there (float32 spacing near {length + phi - 1} is "
        f"{np.spacing(np.float32(length + phi - 1)):.1e}) — and "
        f"{sci(max(errors[(settings[1][0], torch.float32)].values()))} at our model's size. Max |way − PE(t + φ)|:"
    )
    return lines + [reading, "", markdown_table(header, rows), "",
                    ctx.image("sinusoidal shift property", "shift_property.png"), ""]
