"""The position tables as heatmaps (translation report): sinusoidal, and the trained learned table."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.positional.functional import sinusoidal_table
from pelab.report.analyses import learned_table
from pelab.report.common import (
    has_snapshots,
    sci,
    sinusoidal_base,
    snapshots_path,
)
from pelab.report.context import ReportContext
from pelab.report.style import save, symmetric_heatmap


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Position tables as heatmaps (translation report)", ""]
    rows = ctx.copy.data.long_context
    tables = {f"sinusoidal (d = {ctx.copy.model.d_model})":
              sinusoidal_table(torch.arange(rows, dtype=torch.float64), ctx.copy.model.d_model,
                               sinusoidal_base(ctx)).numpy()}
    reading = []
    if has_snapshots(ctx):
        snaps = learned_table.load_snapshots(snapshots_path(ctx, ctx.seed), rows=rows)
        init, trained = snaps.tables[0], snaps.tables[-1]
        tables[f"learned, initialisation (seed {ctx.seed})"] = init.numpy()
        tables[f"learned, trained {snaps.steps[-1]} steps"] = trained.numpy()
        c = ctx.copy.data.context
        untouched = float((trained[c:] - init[c:]).abs().max())
        reading.append(
            f"Rows are positions 0–{rows - 1}: the model trains on {c} positions and the longer test reads "
            f"{rows}. Training moved the first {c} rows of the learned table from a mean norm of "
            f"{init[:c].norm(dim=1).mean():.2f} to {trained[:c].norm(dim=1).mean():.2f} (a sinusoidal row has "
            f"√(d/2) = {math.sqrt(ctx.copy.model.d_model / 2):.2f}); rows {c}–{rows - 1} never receive a gradient "
            f"and are exactly their initial values (largest change {sci(untouched)}), which is why `learned` has "
            "nothing to copy with beyond the training length."
        )
    else:
        reading.append("`learned` is not among this run's schemes (or saved no snapshots), so only the "
                       "sinusoidal table is shown.")
    draw_position_tables(tables, ctx.figure("pe_tables.png"), trained_rows=ctx.copy.data.context)
    return lines + [" ".join(reading), "", ctx.image("position tables", "pe_tables.png"), ""]


def draw_position_tables(tables: dict[str, np.ndarray], path: Path, trained_rows: int | None = None) -> Path:
    """Heatmaps of position tables (rows = positions, columns = dimensions), one panel each.

    trained_rows: draw a line under the last position seen in training."""
    fig, axes = plt.subplots(1, len(tables), figsize=(4.2 * len(tables), 4.2), squeeze=False)
    for ax, (title, table) in zip(axes[0], tables.items()):
        symmetric_heatmap(ax, table, title, "dimension", "position")
        if trained_rows is not None and trained_rows < table.shape[0]:
            ax.axhline(trained_rows - 0.5, color="black", lw=1.2, ls="--")
            ax.text(table.shape[1] - 0.5, trained_rows + 0.3, "not seen in training ↓", ha="right", va="top",
                    fontsize=8, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1})
    fig.tight_layout()
    return save(fig, path)
