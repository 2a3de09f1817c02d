"""The learned table during training: PCA trajectory (copy-task post) and MDS (translation report), from the
snapshots training saves (``pelab.analysis.learned_table``)."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize
from matplotlib.ticker import MaxNLocator

from pelab.analysis import learned_table
from pelab.report.common import over_seeds, snapshots
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import band, save
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    c = ctx.copy.data.context
    found = snapshots(ctx, c)
    if ctx.seed not in found:
        return render("learned_trajectory.md", steps=0)
    snaps = found[ctx.seed]
    traj = learned_table.pca_trajectory(snaps)
    draw_pca_small_multiples(traj.steps, traj.coords, traj.explained, ctx.figure("learned_pca.png"))
    draw_pca_gif(traj.steps, traj.coords, traj.explained, ctx.figure("learned_pca.gif"))
    coords, stress = learned_table.mds_2d(snaps.tables[-1], seed=ctx.seed)
    draw_mds_and_distances(coords, {"trained": learned_table.offset_distance_curve(snaps.tables[-1]),
                                    "initialisation": learned_table.offset_distance_curve(snaps.tables[0])},
                           ctx.figure("learned_mds.png"))
    # (trained, initialisation) over seeds
    adjacent = tuple([learned_table.adjacent_nearest_neighbours(s.tables[i]) for s in found.values()] for i in (-1, 0))
    rho = tuple([learned_table.distance_offset_correlation(s.tables[i]) for s in found.values()] for i in (-1, 0))
    ordered = summarize(adjacent[0])["mean"] >= 0.5
    percent = [[100 * x for x in values] for values in adjacent]
    return render("learned_trajectory.md", c=c, seed=ctx.seed, steps=len(traj.steps),
                  explained=traj.explained.sum(), adjacent_trained=over_seeds(percent[0], 0, unit="%"),
                  adjacent_init=over_seeds(percent[1], 0, unit="%"), ordered=ordered, stress=stress,
                  rho_trained=over_seeds(rho[0], 2), rho_init=over_seeds(rho[1], 2),
                  bends=ordered and summarize(rho[0])["mean"] < 0.7, image=ctx.image, link=ctx.link)


GIF_DPI = 90
GIF_SECONDS_PER_FRAME = 0.6


def _trajectory_limits(coords: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    low, high = coords.reshape(-1, 2).min(0), coords.reshape(-1, 2).max(0)
    pad = 0.08 * (high - low + 1e-9)
    return (low[0] - pad[0], high[0] + pad[0]), (low[1] - pad[1], high[1] + pad[1])


def _draw_positions(ax, xy: np.ndarray, norm: Normalize, labels: bool) -> None:
    ax.plot(xy[:, 0], xy[:, 1], color="grey", lw=0.6, alpha=0.6, zorder=1)
    ax.scatter(xy[:, 0], xy[:, 1], c=np.arange(len(xy)), cmap="viridis", norm=norm, s=22, zorder=2)
    if labels:
        every = -(-len(xy) // 25)  # at most ~25 labels, so long tables stay readable
        for position, (x, y) in enumerate(xy):
            if position % every == 0:
                ax.annotate(str(position), (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7)


def draw_pca_small_multiples(steps: list[int], coords: np.ndarray, explained: np.ndarray, path: Path) -> Path:
    """One panel per checkpoint: the table's rows projected on the trained table's PC 1 and PC 2."""
    n = len(steps)
    cols = min(4, n)
    rows = -(-n // cols)
    xlim, ylim = _trajectory_limits(coords)
    norm = Normalize(0, coords.shape[1] - 1)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.8 * rows + 0.4), squeeze=False, sharex=True,
                             sharey=True, layout="constrained")
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        _draw_positions(ax, coords[i], norm, labels=False)
        ax.set_xlim(xlim)
        ax.set_ylim(ylim)
        ax.set_title(f"step {steps[i]}", fontsize=9)
        if i % cols == 0:
            ax.set_ylabel(f"PC 2 ({explained[1]:.0%})")
        if i >= n - cols:
            ax.set_xlabel(f"PC 1 ({explained[0]:.0%})")
    mappable = plt.cm.ScalarMappable(norm=norm, cmap="viridis")
    fig.colorbar(mappable, ax=axes, fraction=0.02, pad=0.02, label="position")
    fig.suptitle("Learned position table during training (axes: PCA of the trained table)", fontsize=11)
    return save(fig, path)


def draw_pca_gif(steps: list[int], coords: np.ndarray, explained: np.ndarray, path: Path) -> Path:
    """The same trajectory as an animated GIF, one frame per checkpoint, positions labelled."""
    xlim, ylim = _trajectory_limits(coords)
    norm = Normalize(0, coords.shape[1] - 1)
    frames = []
    for step, xy in zip(steps, coords):
        fig, ax = plt.subplots(figsize=(4.8, 4.4), dpi=GIF_DPI)
        _draw_positions(ax, xy, norm, labels=True)
        ax.set_xlim(xlim)
        ax.set_ylim(ylim)
        ax.set_xlabel(f"PC 1 ({explained[0]:.0%} of trained variance)")
        ax.set_ylabel(f"PC 2 ({explained[1]:.0%})")
        ax.set_title(f"learned position table, step {step}", fontsize=10)
        fig.tight_layout()
        fig.canvas.draw()
        frames.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
        plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    imageio.mimsave(path, frames, duration=GIF_SECONDS_PER_FRAME, loop=0)
    return path


def draw_mds_and_distances(
    coords: np.ndarray, distance_curves: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], path: Path
) -> Path:
    """Left: 2-D MDS of the trained table, positions labelled. Right: ‖PE(i) − PE(j)‖ against |i − j|
    (mean over pairs, band = min–max) for each table in ``distance_curves`` {name: (offsets, mean, min, max)}."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    norm = Normalize(0, len(coords) - 1)
    _draw_positions(left, coords, norm, labels=True)
    left.set_xlabel("MDS 1")
    left.set_ylabel("MDS 2")
    left.set_title("MDS of the trained learned table", fontsize=10)
    left.set_aspect("equal", adjustable="datalim")
    for (name, (offset, mean, low, high)), color in zip(distance_curves.items(), plt.cm.tab10.colors):
        band(right, offset, {"mean": mean, "min": low, "max": high}, color, name, edge=True, marker="o", ms=3)
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_xlabel("offset |i − j|")
    right.set_ylabel("‖PE(i) − PE(j)‖ (mean, band = min–max)")
    right.set_title("distance between rows by offset", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)
