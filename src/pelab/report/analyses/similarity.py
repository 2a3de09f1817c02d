"""Similarity between positions (copy-task post): cosine of position rows, by offset.

Similarity between the position vectors of a table (the copy-task post's dot-product and cosine
matrices of the learned table at initialisation, after training, and of the sinusoidal table).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.positional.functional import sinusoidal_table
from pelab.report.analyses import learned_table
from pelab.report.common import (
    has_snapshots,
    over_seeds,
    sinusoidal_base,
    snapshots_path,
)
from pelab.report.context import ReportContext
from pelab.report.style import save, symmetric_heatmap
from pelab.stats import summarize


def position_similarity(table: torch.Tensor) -> dict[str, torch.Tensor]:
    """table: (P, D) -> {"dot": (P, P) PE(i)·PE(j), "cosine": (P, P) cos∠(PE(i), PE(j))}."""
    table = table.double()
    dot = table @ table.T
    unit = table / table.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return {"dot": dot, "cosine": unit @ unit.T}


def mean_by_offset(matrix: torch.Tensor, max_offset: int | None = None) -> torch.Tensor:
    """Mean of matrix[i, i + Δ] over i, for Δ = 0..max_offset (default P−1): (max_offset+1,)."""
    p = matrix.shape[0]
    max_offset = p - 1 if max_offset is None else min(max_offset, p - 1)
    return torch.stack([matrix.diagonal(delta).mean() for delta in range(max_offset + 1)])


def neighbour_cosine(cosine: torch.Tensor) -> float:
    """Mean cosine similarity of neighbouring positions (offset 1) from a (P, P) cosine matrix."""
    return float(mean_by_offset(cosine, 1)[1])


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Similarity between positions (copy-task post)", ""]
    c = ctx.copy.data.context
    sinusoidal = sinusoidal_table(torch.arange(c, dtype=torch.float64), ctx.copy.model.d_model,
                                  sinusoidal_base(ctx))
    sims = {}
    if has_snapshots(ctx):
        snaps = learned_table.load_snapshots(snapshots_path(ctx, ctx.seed), rows=c)
        sims["learned, initialisation"] = position_similarity(snaps.tables[0])
        sims[f"learned, trained (seed {ctx.seed})"] = position_similarity(snaps.tables[-1])
    sims["sinusoidal"] = position_similarity(sinusoidal)
    draw_similarity_matrices({k: {kind: m.numpy() for kind, m in v.items()} for k, v in sims.items()},
                                ctx.figure("position_similarity.png"))
    neighbour = {name: neighbour_cosine(m["cosine"]) for name, m in sims.items()}
    far = {name: float(mean_by_offset(m["cosine"])[c // 2:].mean()) for name, m in sims.items()}
    parts = ["Mean cosine similarity between neighbouring positions (Δ = 1), and averaged over offsets "
             f"Δ ≥ {c // 2}: " + "; ".join(f"{name}: {neighbour[name]:.2f} and {far[name]:.2f}" for name in sims)
             + "."]
    if has_snapshots(ctx):
        trained = [neighbour_cosine(position_similarity(
                       learned_table.load_snapshots(snapshots_path(ctx, seed), rows=c).tables[-1])["cosine"])
                   for seed in ctx.seeds if snapshots_path(ctx, seed).exists()]
        closer = summarize(trained)["mean"] > neighbour["learned, initialisation"] + 0.1
        parts.append(f"Over seeds, the trained table's neighbour cosine is {over_seeds(trained, 2)}: training "
                     + ("makes neighbouring positions similar, as the sinusoidal table is by construction." if closer
                        else "leaves neighbouring positions about as dissimilar as at initialisation."))
    return lines + [" ".join(parts), "", ctx.image("position similarity", "position_similarity.png"), ""]


def draw_similarity_matrices(similarities: dict[str, dict[str, np.ndarray]], path: Path) -> Path:
    """Rows: dot product, cosine; columns: one table each. Each panel is (P, P) over positions."""
    names = list(similarities)
    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 7.6), squeeze=False)
    for col, name in enumerate(names):
        for row, (kind, label) in enumerate((("dot", "dot product"), ("cosine", "cosine similarity"))):
            values = similarities[name][kind]
            ax = axes[row, col]
            image = symmetric_heatmap(ax, values, f"{name}\n{label}", "position j", "position i")
            ax.set_aspect("equal")
            if kind == "cosine":
                image.set_clim(-1, 1)
    fig.tight_layout()
    return save(fig, path)
