"""Similarity between positions (copy-task post): dot product and cosine of position rows, by offset
(``pelab.analysis.similarity``): the learned table at initialisation and after training, and the sinusoidal table."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.analysis.similarity import mean_by_offset, neighbour_cosine, position_similarity
from pelab.positional.functional import sinusoidal_table
from pelab.report.common import over_seeds, sinusoidal_base, snapshots, table_scheme
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import save, symmetric_heatmap
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    c = ctx.copy.data.context
    sinusoidal = sinusoidal_table(torch.arange(c, dtype=torch.float64), ctx.copy.model.d_model,
                                  sinusoidal_base(ctx))
    sims, scheme, found = {}, table_scheme(ctx), snapshots(ctx, c)
    if ctx.seed in found:
        sims[f"{scheme}, initialisation"] = position_similarity(found[ctx.seed].tables[0])
        sims[f"{scheme}, trained (seed {ctx.seed})"] = position_similarity(found[ctx.seed].tables[-1])
    sims["sinusoidal"] = position_similarity(sinusoidal)
    draw_similarity_matrices({k: {kind: m.numpy() for kind, m in v.items()} for k, v in sims.items()},
                             ctx.figure("position_similarity.png"))
    neighbour = {name: neighbour_cosine(m["cosine"]) for name, m in sims.items()}
    far = {name: float(mean_by_offset(m["cosine"])[c // 2:].mean()) for name, m in sims.items()}
    trained = ([neighbour_cosine(position_similarity(s.tables[-1])["cosine"]) for s in found.values()]
               if ctx.seed in found else [])
    return render("similarity.md", half=c // 2, image=ctx.image,
                  pairs="; ".join(f"{name}: {neighbour[name]:.2f} and {far[name]:.2f}" for name in sims),
                  trained=over_seeds(trained, 2) if trained else "",
                  closer=bool(trained) and summarize(trained)["mean"] > neighbour[f"{scheme}, initialisation"] + 0.1)


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
