"""Similarity between positions (copy-task post)."""

from __future__ import annotations

import torch

from pelab.analysis import learned_table, similarity
from pelab.positional.functional import sinusoidal_table
from pelab.report import analysis_figures as figures
from pelab.report.context import ReportContext
from pelab.report.sections._shared import (
    has_snapshots,
    over_seeds,
    sinusoidal_base,
    snapshots_path,
)
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Similarity between positions (copy-task post)", ""]
    c = ctx.copy.data.context
    sinusoidal = sinusoidal_table(torch.arange(c, dtype=torch.float64), ctx.copy.model.d_model,
                                  sinusoidal_base(ctx))
    sims = {}
    if has_snapshots(ctx):
        snaps = learned_table.load_snapshots(snapshots_path(ctx, ctx.seed), rows=c)
        sims["learned, initialisation"] = similarity.position_similarity(snaps.tables[0])
        sims[f"learned, trained (seed {ctx.seed})"] = similarity.position_similarity(snaps.tables[-1])
    sims["sinusoidal"] = similarity.position_similarity(sinusoidal)
    figures.similarity_matrices({k: {kind: m.numpy() for kind, m in v.items()} for k, v in sims.items()},
                                ctx.figure("position_similarity.png"))
    neighbour = {name: similarity.neighbour_cosine(m["cosine"]) for name, m in sims.items()}
    far = {name: float(similarity.mean_by_offset(m["cosine"])[c // 2:].mean()) for name, m in sims.items()}
    parts = ["Mean cosine similarity between neighbouring positions (Δ = 1), and averaged over offsets "
             f"Δ ≥ {c // 2}: " + "; ".join(f"{name}: {neighbour[name]:.2f} and {far[name]:.2f}" for name in sims)
             + "."]
    if has_snapshots(ctx):
        trained = [similarity.neighbour_cosine(similarity.position_similarity(
                       learned_table.load_snapshots(snapshots_path(ctx, seed), rows=c).tables[-1])["cosine"])
                   for seed in ctx.seeds if snapshots_path(ctx, seed).exists()]
        closer = summarize(trained)["mean"] > neighbour["learned, initialisation"] + 0.1
        parts.append(f"Over seeds, the trained table's neighbour cosine is {over_seeds(trained, 2)}: training "
                     + ("makes neighbouring positions similar, as the sinusoidal table is by construction." if closer
                        else "leaves neighbouring positions about as dissimilar as at initialisation."))
    return lines + [" ".join(parts), "", ctx.image("position similarity", "position_similarity.png"), ""]
