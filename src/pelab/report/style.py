"""One look for every figure: a fixed colour per scheme, readable fonts, saved at a fixed DPI."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from pelab.positional import scheme_names  # noqa: E402

DPI = 130


EXTRA_COLOURS = [(0.0, 0.0, 0.0), (0.45, 0.45, 0.0), (0.0, 0.45, 0.45), (0.55, 0.0, 0.3)]  # after tab10's ten


def scheme_palette() -> dict[str, tuple[float, float, float]]:
    """A fixed, distinct colour per registered scheme (tab10, then black, olive, teal, wine)."""
    names = scheme_names()
    colours = list(sns.color_palette("tab10", n_colors=10)) + EXTRA_COLOURS
    if len(names) > len(colours):
        colours += list(sns.color_palette("husl", n_colors=len(names) - len(colours)))
    return dict(zip(names, colours))


def setup() -> None:
    sns.set_theme(context="notebook", style="whitegrid", font_scale=0.95)


def save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def symmetric_heatmap(ax, values: np.ndarray, title: str, xlabel: str, ylabel: str, cmap: str = "RdBu_r"):
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


def draw_curves(curves: pd.DataFrame, schemes: list[str], panels: list[tuple[str, str | None]], path: Path, *,
                log: bool = False, sharey: bool = False, ylabel: str | None = None, title: str | None = None,
                figsize: tuple[float, float] = (11, 4.2)) -> Path:
    """Curves by training step, one panel per (column, panel title) of ``panels``, from per-seed rows (columns pe,
    seed, step and the panels' columns): per scheme the mean over seeds, band = min–max over seeds."""
    palette = scheme_palette()
    fig, axes = plt.subplots(1, len(panels), figsize=figsize, sharey=sharey, squeeze=False)
    axes = axes[0]
    for ax, (column, panel_title) in zip(axes, panels):
        for scheme in schemes:
            sel = curves[curves["pe"] == scheme].dropna(subset=[column])
            stats = sel.groupby("step")[column].agg(["mean", "min", "max"]).reset_index()
            ax.plot(stats["step"], stats["mean"], label=scheme, color=palette[scheme], lw=1.4)
            ax.fill_between(stats["step"], stats["min"], stats["max"], color=palette[scheme], alpha=0.15)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("training step")
        if panel_title:
            ax.set_title(panel_title, fontsize=10)
    if ylabel:
        axes[0].set_ylabel(ylabel)
    axes[-1].legend(fontsize=8, ncol=2)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return save(fig, path)
