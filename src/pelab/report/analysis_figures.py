"""Figures of the references' analyses. Each function draws arrays computed by ``pelab.analysis`` and
saves one file; none computes anything the report states."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.ticker import MaxNLocator

from pelab.report.style import save, scheme_palette

GIF_DPI = 90
GIF_SECONDS_PER_FRAME = 0.6


def _symmetric_heatmap(ax, values: np.ndarray, title: str, xlabel: str, ylabel: str, cmap: str = "RdBu_r"):
    """imshow with a colour scale symmetric around zero and a colourbar."""
    limit = float(np.abs(values).max()) or 1.0
    image = ax.imshow(values, cmap=cmap, vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    plt.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
    return image


def position_tables(tables: dict[str, np.ndarray], path: Path, trained_rows: int | None = None) -> Path:
    """Heatmaps of position tables (rows = positions, columns = dimensions), one panel each.

    trained_rows: draw a line under the last position seen in training."""
    fig, axes = plt.subplots(1, len(tables), figsize=(4.2 * len(tables), 4.2), squeeze=False)
    for ax, (title, table) in zip(axes[0], tables.items()):
        _symmetric_heatmap(ax, table, title, "dimension", "position")
        if trained_rows is not None and trained_rows < table.shape[0]:
            ax.axhline(trained_rows - 0.5, color="black", lw=1.2, ls="--")
            ax.text(table.shape[1] - 0.5, trained_rows + 0.3, "not seen in training ↓", ha="right", va="top",
                    fontsize=8, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1})
    fig.tight_layout()
    return save(fig, path)


def similarity_matrices(similarities: dict[str, dict[str, np.ndarray]], path: Path) -> Path:
    """Rows: dot product, cosine; columns: one table each. Each panel is (P, P) over positions."""
    names = list(similarities)
    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 7.6), squeeze=False)
    for col, name in enumerate(names):
        for row, (kind, label) in enumerate((("dot", "dot product"), ("cosine", "cosine similarity"))):
            values = similarities[name][kind]
            ax = axes[row, col]
            image = _symmetric_heatmap(ax, values, f"{name}\n{label}", "position j", "position i")
            ax.set_aspect("equal")
            if kind == "cosine":
                image.set_clim(-1, 1)
    fig.tight_layout()
    return save(fig, path)


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


def pca_small_multiples(steps: list[int], coords: np.ndarray, explained: np.ndarray, path: Path) -> Path:
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


def pca_gif(steps: list[int], coords: np.ndarray, explained: np.ndarray, path: Path) -> Path:
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


def mds_and_distances(
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
        right.plot(offset, mean, marker="o", ms=3, color=color, label=name)
        right.fill_between(offset, low, high, color=color, alpha=0.15)
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_xlabel("offset |i − j|")
    right.set_ylabel("‖PE(i) − PE(j)‖ (mean, band = min–max)")
    right.set_title("distance between rows by offset", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def distance_decay(
    raw: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]],
    trained: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    path: Path,
) -> Path:
    """Top: raw scores against Δ, normalised by the value at Δ = 0 ({panel: {curve: (Δ, y)}}).
    Bottom: layer-0 scores of trained models ({panel: (Δ, mean (H, K), min, max)}), one line per head
    (mean over t) with a band spanning the values at different t for the same Δ."""
    fig, axes = plt.subplots(2, max(len(raw), len(trained)), figsize=(11, 7.6), squeeze=False)
    for ax, (title, curves) in zip(axes[0], raw.items()):
        for name, (delta, y) in curves.items():
            ax.plot(delta, y, lw=1.4, label=name)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("offset Δ")
        ax.set_ylabel("score / score at Δ = 0")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    for ax, (title, (delta, mean, low, high)) in zip(axes[1], trained.items()):
        for head, color in zip(range(mean.shape[0]), plt.cm.tab10.colors):
            ax.plot(delta, mean[head], lw=1.3, color=color, label=f"head {head}")
            ax.fill_between(delta, low[head], high[head], color=color, alpha=0.15)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("offset Δ = s − t")
        ax.set_ylabel("q_t·k_s / √d_head")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, ncol=2)
    for ax in axes.flat[len(raw) + len(trained):]:
        ax.axis("off")
    fig.tight_layout()
    return save(fig, path)


def shift_property(
    table: np.ndarray, shifted: np.ndarray, matrix: np.ndarray, phi: int, path: Path, zoom: int = 8
) -> Path:
    """The table PE(t), its shift M(φ)·PE(t), the block-diagonal M(φ) and its top-left corner."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.6))
    _symmetric_heatmap(axes[0, 0], table, "PE(t)", "dimension i", "position t")
    _symmetric_heatmap(axes[0, 1], shifted, f"M(φ)·PE(t), φ = {phi}  (= PE(t + φ))", "dimension i", "position t")
    _symmetric_heatmap(axes[1, 0], matrix, f"M(φ), φ = {phi}: block-diagonal {matrix.shape[0]}×{matrix.shape[1]}",
                       "column", "row")
    corner = matrix[:zoom, :zoom]
    _symmetric_heatmap(axes[1, 1], corner, f"M(φ), top-left {zoom}×{zoom}: 2×2 rotations", "column", "row")
    axes[1, 1].set_aspect("equal")
    for (r, c), value in np.ndenumerate(corner):
        if value != 0:
            axes[1, 1].text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if abs(value) > 0.6 else "black")
    fig.tight_layout()
    return save(fig, path)


def attention_grid(weights: np.ndarray, labels: list[str], title: str, path: Path) -> Path:
    """weights (L, H, T, T): one panel per layer (rows) and head (columns), tokens as tick labels."""
    n_layers, n_heads, t, _ = weights.shape
    size = max(2.6, 0.17 * t)
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(size * n_heads + 1.0, size * n_layers + 0.8), squeeze=False,
                             layout="constrained")
    for layer in range(n_layers):
        for head in range(n_heads):
            ax = axes[layer, head]
            image = ax.imshow(weights[layer, head], cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ax.grid(False)
            ax.set_xticks(range(t), labels, rotation=90, fontsize=6)
            ax.set_yticks(range(t), labels, fontsize=6)
            ax.set_title(f"layer {layer}, head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel("query", fontsize=8)
            if layer == n_layers - 1:
                ax.set_xlabel("key", fontsize=8)
    fig.colorbar(image, ax=axes, fraction=0.015, pad=0.01, label="attention weight")
    fig.suptitle(title, fontsize=11)
    return save(fig, path)



def loss_curves(histories: pd.DataFrame, schemes: list[str], path: Path) -> Path:
    """Training and held-out loss per scheme from per-seed histories (columns pe, seed, step, loss, test_loss):
    mean over seeds, band = min–max over seeds, log scale."""
    palette = scheme_palette()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = (("loss", "training loss (batch mean)"), ("test_loss", "held-out loss (test split)"))
    for ax, (column, title) in zip(axes, panels):
        for scheme in schemes:
            sel = histories[histories["pe"] == scheme].dropna(subset=[column])
            stats = sel.groupby("step")[column].agg(["mean", "min", "max"]).reset_index()
            ax.plot(stats["step"], stats["mean"], label=scheme, color=palette[scheme], lw=1.4)
            ax.fill_between(stats["step"], stats["min"], stats["max"], color=palette[scheme], alpha=0.15)
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("cross-entropy per token")
    axes[1].legend(fontsize=8, ncol=2)
    fig.suptitle("Copy task: mean over seeds, band = min–max over seeds", fontsize=11)
    fig.tight_layout()
    return save(fig, path)


def seq2seq_attention(maps: dict[str, np.ndarray], src_labels: list[str], tgt_labels: list[str], title: str,
                      path: Path) -> Path:
    """Rows: encoder self, decoder self, cross attention; columns: layers; each panel the mean over heads.

    maps: {kind: (L, H, Tq, Tk)}; queries on the y axis, keys on the x axis, tokens as tick labels."""
    kinds = list(maps)
    n_layers = max(m.shape[0] for m in maps.values())
    labels = {"encoder self": (src_labels, src_labels), "decoder self": (tgt_labels, tgt_labels),
              "cross": (tgt_labels, src_labels)}
    sides = {"encoder self": ("source", "source"), "decoder self": ("target", "target"), "cross": ("target", "source")}
    size = max(3.0, 0.16 * max(len(src_labels), len(tgt_labels)))
    fig, axes = plt.subplots(len(kinds), n_layers, figsize=(size * n_layers + 1.0, size * len(kinds) + 0.8),
                             squeeze=False, layout="constrained")
    for row, kind in enumerate(kinds):
        query_labels, key_labels = labels[kind]
        for layer in range(n_layers):
            ax = axes[row, layer]
            if layer >= maps[kind].shape[0]:
                ax.axis("off")
                continue
            image = ax.imshow(maps[kind][layer].mean(0), cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ax.grid(False)
            ax.set_xticks(range(len(key_labels)), key_labels, rotation=90, fontsize=6)
            ax.set_yticks(range(len(query_labels)), query_labels, fontsize=6)
            ax.set_title(f"{kind}, layer {layer} (mean over heads)", fontsize=9)
            ax.set_ylabel(f"query ({sides[kind][0]})", fontsize=8)
            ax.set_xlabel(f"key ({sides[kind][1]})", fontsize=8)
    fig.colorbar(image, ax=axes, fraction=0.015, pad=0.01, label="attention weight")
    fig.suptitle(title, fontsize=11)
    return save(fig, path)
