"""One look for every figure: a fixed colour per scheme, readable fonts, saved at a fixed DPI."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from pelab.positional import scheme_names  # noqa: E402

DPI = 130


def scheme_palette() -> dict[str, tuple[float, float, float]]:
    names = scheme_names()
    return dict(zip(names, sns.color_palette("tab10", n_colors=max(10, len(names)))))


def setup() -> None:
    sns.set_theme(context="notebook", style="whitegrid", font_scale=0.95)


def save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path
