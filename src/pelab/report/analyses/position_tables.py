"""The position tables as heatmaps (translation report): sinusoidal, and the trained learned table."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.positional.functional import sinusoidal_table
from pelab.report.common import sci, sinusoidal_base, snapshots, table_scheme
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import save, symmetric_heatmap


def section(ctx: ReportContext) -> list[str]:
    rows, c = ctx.copy.data.long_context, ctx.copy.data.context
    tables = {f"sinusoidal (d = {ctx.copy.model.d_model})":
              sinusoidal_table(torch.arange(rows, dtype=torch.float64), ctx.copy.model.d_model,
                               sinusoidal_base(ctx)).numpy()}
    learned, scheme = None, table_scheme(ctx)
    snaps = snapshots(ctx, rows, [ctx.seed]).get(ctx.seed)
    if snaps is not None:
        init, trained = snaps.tables[0], snaps.tables[-1]
        tables[f"{scheme}, initialisation (seed {ctx.seed})"] = init.numpy()
        tables[f"{scheme}, trained {snaps.steps[-1]} steps"] = trained.numpy()
        learned = {"init_norm": float(init[:c].norm(dim=1).mean()),
                   "trained_norm": float(trained[:c].norm(dim=1).mean()),
                   "sinusoidal_norm": math.sqrt(ctx.copy.model.d_model / 2),
                   "untouched": sci(float((trained[c:] - init[c:]).abs().max()))}
    draw_position_tables(tables, ctx.figure("pe_tables.png"), trained_rows=c)
    return render("position_tables.md", rows=rows, c=c, learned=learned, scheme=scheme, image=ctx.image)


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
