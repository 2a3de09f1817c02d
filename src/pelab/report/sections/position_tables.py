"""The position tables as heatmaps (translation report)."""

from __future__ import annotations

import math

import torch

from pelab.analysis import learned_table
from pelab.positional.functional import sinusoidal_table
from pelab.report import analysis_figures as figures
from pelab.report.context import ReportContext
from pelab.report.sections._shared import (
    has_snapshots,
    sci,
    sinusoidal_base,
    snapshots_path,
)


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
    figures.position_tables(tables, ctx.figure("pe_tables.png"), trained_rows=ctx.copy.data.context)
    return lines + [" ".join(reading), "", ctx.image("position tables", "pe_tables.png"), ""]
