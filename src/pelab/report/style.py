"""One look for every figure: a fixed colour per scheme, readable fonts, saved at a fixed DPI."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
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
