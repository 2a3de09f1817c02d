"""The learned table during training, PCA trajectory (copy-task post) and MDS (translation report)."""

from __future__ import annotations

from pelab.analysis import learned_table
from pelab.report import analysis_figures as figures
from pelab.report.context import ReportContext
from pelab.report.sections._shared import (
    has_snapshots,
    over_seeds,
    snapshots_path,
)
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    lines = ["### The learned table during training: PCA trajectory (copy-task post) and MDS (translation report)", ""]
    if not has_snapshots(ctx):
        return lines + ["`learned` is not among this run's schemes or saved no snapshots "
                        "(`copy.train.checkpoints` = 0); nothing to draw.", ""]
    c = ctx.copy.data.context
    snaps = learned_table.load_snapshots(snapshots_path(ctx, ctx.seed), rows=c)
    traj = learned_table.pca_trajectory(snaps)
    figures.pca_small_multiples(traj.steps, traj.coords, traj.explained, ctx.figure("learned_pca.png"))
    figures.pca_gif(traj.steps, traj.coords, traj.explained, ctx.figure("learned_pca.gif"))
    coords, stress = learned_table.mds_2d(snaps.tables[-1], seed=ctx.seed)
    figures.mds_and_distances(coords, {"trained": learned_table.offset_distance_curve(snaps.tables[-1]),
                                       "initialisation": learned_table.offset_distance_curve(snaps.tables[0])},
                              ctx.figure("learned_mds.png"))
    measures = {"adjacent": ([], []), "rho": ([], [])}  # (trained, initialisation) over seeds
    for seed in ctx.seeds:
        if snapshots_path(ctx, seed).exists():
            tables = learned_table.load_snapshots(snapshots_path(ctx, seed), rows=c).tables
            for when, table in ((0, tables[-1]), (1, tables[0])):
                measures["adjacent"][when].append(learned_table.adjacent_nearest_neighbours(table))
                measures["rho"][when].append(learned_table.distance_offset_correlation(table))
    adjacent, rho = measures["adjacent"], measures["rho"]
    ordered = summarize(adjacent[0])["mean"] >= 0.5
    reading = (
        f"Rows 0–{c - 1} of seed {ctx.seed}'s table at {len(traj.steps)} checkpoints, all projected on the first "
        f"two principal components of the trained table, which hold {traj.explained.sum():.0%} of its variance. "
        f"After training, the nearest row of a position is a neighbouring position (i ± 1) for "
        f"{over_seeds([100 * x for x in adjacent[0]], 0, unit='%')} of positions, against "
        f"{over_seeds([100 * x for x in adjacent[1]], 0, unit='%')} at initialisation"
        + (" — training lays most positions out in order along a curve. " if ordered else ". ")
        + f"The MDS map of seed {ctx.seed}'s trained table has Kruskal stress {stress:.2f}. The translation report "
        "reads its MDS figure as “close positions have closer encodings”; here the Spearman ρ between |i − j| and "
        f"‖PE(i) − PE(j)‖ is {over_seeds(rho[0], 2)} after training ({over_seeds(rho[1], 2)} at initialisation)"
        + (", lower than the ordering suggests: the curve bends back, so distant positions can be close."
           if ordered and summarize(rho[0])["mean"] < 0.7 else ".")
    )
    return lines + [reading, "", ctx.image("learned table PCA during training", "learned_pca.png"), "",
                    f"Animated: [learned_pca.gif]({ctx.link}/learned_pca.gif)", "",
                    ctx.image("MDS of the learned table", "learned_mds.png"), ""]
