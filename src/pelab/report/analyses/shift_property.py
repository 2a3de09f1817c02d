"""The linear shift property of the sinusoidal table (linear-shift notebook), four ways (``pelab.analysis.shift``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.analysis.shift import SHIFT_WAYS, shift_block_matrix, shift_errors, shift_matrix
from pelab.positional.functional import sinusoidal_table
from pelab.report.common import NOTEBOOK_DIM, NOTEBOOK_LENGTH, NOTEBOOK_PHI, sci, sinusoidal_base
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import save, symmetric_heatmap
from pelab.report.tables import markdown_table


def section(ctx: ReportContext) -> list[str]:
    length, dim, phi = NOTEBOOK_LENGTH, NOTEBOOK_DIM, NOTEBOOK_PHI
    base = sinusoidal_base(ctx)
    table = sinusoidal_table(torch.arange(length, dtype=torch.float64), dim, base)
    matrix = shift_matrix(dim, phi, base)
    draw_shift_property(table.numpy(), shift_block_matrix(table, phi, base).numpy(), matrix.numpy(),
                        phi, ctx.figure("shift_property.png"))
    d, long, c = ctx.copy.model.d_model, ctx.copy.data.long_context, ctx.copy.data.context
    settings = [(f"notebook: {length} positions, d = {dim}, φ = {phi}", length, dim, phi),
                (f"our model: {long} positions, d = {d}, φ = {c}", long, d, c)]
    dtypes = (torch.float64, torch.float32)
    errors = {(label, dtype): shift_errors(n, dm, p, base, dtype) for label, n, dm, p in settings for dtype in dtypes}
    header = ["way"] + [f"{label}, {str(dtype).removeprefix('torch.')}" for label, *_ in settings for dtype in dtypes]
    rows = [[way] + [sci(errors[(label, dtype)][way]) for label, *_ in settings for dtype in dtypes]
            for way in SHIFT_WAYS]
    f64, f32 = errors[(settings[0][0], torch.float64)], errors[(settings[0][0], torch.float32)]
    worst = max(f64, key=f64.get)
    return render("shift_property.md", same=f64[worst] < 1e-10, worst64=sci(f64[worst]), worst_way=worst,
                  top=length + phi - 1, worst32=sci(max(f32.values())),
                  spacing=np.spacing(np.float32(length + phi - 1)),
                  ours32=sci(max(errors[(settings[1][0], torch.float32)].values())),
                  table=markdown_table(header, rows), image=ctx.image)


def draw_shift_property(
    table: np.ndarray, shifted: np.ndarray, matrix: np.ndarray, phi: int, path: Path, zoom: int = 8
) -> Path:
    """The table PE(t), its shift M(φ)·PE(t), the block-diagonal M(φ) and its top-left corner."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.6))
    symmetric_heatmap(axes[0, 0], table, "PE(t)", "dimension i", "position t")
    symmetric_heatmap(axes[0, 1], shifted, f"M(φ)·PE(t), φ = {phi}  (= PE(t + φ))", "dimension i", "position t")
    symmetric_heatmap(axes[1, 0], matrix, f"M(φ), φ = {phi}: block-diagonal {matrix.shape[0]}×{matrix.shape[1]}",
                       "column", "row")
    corner = matrix[:zoom, :zoom]
    symmetric_heatmap(axes[1, 1], corner, f"M(φ), top-left {zoom}×{zoom}: 2×2 rotations", "column", "row")
    axes[1, 1].set_aspect("equal")
    for (r, c), value in np.ndenumerate(corner):
        if value != 0:
            axes[1, 1].text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if abs(value) > 0.6 else "black")
    fig.tight_layout()
    return save(fig, path)
