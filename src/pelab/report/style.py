"""One look for every figure: a fixed colour per scheme, readable fonts, saved at a fixed DPI."""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

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


SWITCHED_COLOURS = 12  # husl hues a scheme with switches (``rope+qk_norm``) is drawn in, by its name's crc32


class Palette(dict):
    """Each registered scheme's colour; a scheme with switches, named ``<scheme>+<switch>`` and registered by no
    entry, a colour of its own from ``SWITCHED_COLOURS`` husl hues, fixed by its name."""

    def __missing__(self, name: str) -> tuple[float, float, float]:
        import zlib

        hues = sns.color_palette("husl", n_colors=SWITCHED_COLOURS)
        colour = self[name] = tuple(hues[zlib.crc32(name.encode()) % SWITCHED_COLOURS])
        return colour


def scheme_palette() -> dict[str, tuple[float, float, float]]:
    """A fixed, distinct colour per registered scheme (tab10, then black, olive, teal, wine), and per scheme with
    switches (``Palette``)."""
    names = scheme_names()
    colours = list(sns.color_palette("tab10", n_colors=10)) + EXTRA_COLOURS
    if len(names) > len(colours):
        colours += list(sns.color_palette("husl", n_colors=len(names) - len(colours)))
    return Palette(zip(names, colours))


def palette_with_variants(names: list[str]) -> dict[str, tuple[float, float, float]]:
    """Each scheme's colour, an evaluation-time variant (``<scheme>+PI``, ``pelab.analysis.variants``) in its
    scheme's; a scheme with switches (``none+qk_norm``) is a scheme, in a colour of its own, and so are its
    variants (``rope+qk_norm+PI`` in ``rope+qk_norm``'s)."""
    from pelab.positional.switched import SWITCHES

    def base(name: str) -> str:
        head, _, tail = name.rpartition("+")
        return name if not head or tail in SWITCHES else base(head)

    colours = scheme_palette()
    return Palette({**colours, **{name: colours[base(name)] for name in names if "+" in name}})


VARIANT_LINES = {"PI": "--", "NTK": ":", "dynamic": "-.", "yarn": (0, (6, 2)), "llama3": (0, (3, 1, 1, 1, 1, 1)),
                 "spread": (0, (1, 2)), "masked": (0, (8, 2, 1, 2)), "logn": (0, (5, 1, 1, 1)), "crop": (0, (1, 1))}


def line_style(name: str) -> str | tuple:
    """Solid for a scheme; each evaluation-time variant (``<scheme>+<label>``) its own dashes."""
    return VARIANT_LINES.get(name.rpartition("+")[2], "-") if "+" in name else "-"


def setup() -> None:
    # titles at the top of their axes (no figure has tick labels above an axes): matplotlib's automatic placement
    # measures every tick label of every axes at each draw, a fifth of a report's drawing time
    sns.set_theme(context="notebook", style="whitegrid", font_scale=0.95, rc={"axes.titley": 1.0})


_renderer: ProcessPoolExecutor | None = None  # ``rendering_in_background``'s processes, while it is open
_rendering: list[Future] = []


def _render(figure: bytes, path: Path, tight: bool) -> None:
    fig = pickle.loads(figure)
    fig.savefig(path, dpi=DPI, bbox_inches="tight" if tight else None)
    plt.close(fig)


@contextmanager
def rendering_in_background(workers: int | None = None) -> Iterator[None]:
    """Inside, ``save`` hands each figure (pickled) to one of ``workers`` processes (default: one per CPU core beyond
    this one's, at most two; 0: none) that renders and writes it while the caller draws the next one: rendering is
    about 60% of a report's time, which is one process. Leaves when every figure is written; a figure that failed
    raises here. The workers are forked before the caller runs anything more."""
    global _renderer
    if workers is None:
        workers = min(2, max(0, (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1) - 1))
    if workers == 0 or _renderer is not None:
        yield
        return
    _renderer = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=setup)
    try:
        _renderer.submit(int).result()  # forks every worker now (a fork pool starts them all at its first task)
        yield
        for done in _rendering:
            done.result()
    finally:
        _renderer.shutdown(wait=True, cancel_futures=True)
        _renderer, _rendering[:] = None, []


def save(fig: plt.Figure, path: Path, tight: bool = True) -> Path:
    """Write ``fig`` to ``path`` at ``DPI`` (cropped to its tight bounding box unless ``tight`` is False) and close
    it; in ``rendering_in_background``, by one of its processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if _renderer is None:
        fig.savefig(path, dpi=DPI, bbox_inches="tight" if tight else None)
    else:
        _rendering.append(_renderer.submit(_render, pickle.dumps(fig), path, tight))
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


class Attention(NamedTuple):
    """One panel of ``draw_attention``: weights (Tq, Tk), the query and key tokens, and its titles."""

    weights: np.ndarray
    queries: list[str]
    keys: list[str]
    title: str
    ylabel: str = ""
    xlabel: str = ""


def draw_attention(grid: list[list[Attention | None]], size: float, title: str, path: Path) -> Path:
    """Attention maps on one 0–1 scale, ``size`` inches a panel, queries down and keys across, the tokens as tick
    labels; a None panel is left blank."""
    n_rows, n_cols = len(grid), len(grid[0])
    # Gaps in inches, from the longest token (tick labels at 6 pt, about 0.06 inch a character): below a panel its
    # rotated key labels, the axis label and the next panel's title; left of it the query labels and the axis label.
    # Laid out by hand and saved as laid out: constrained layout took about 15% longer a figure, and trimming the margins
    # to the tight bounding box at save (one more pass over every tick label) and the titles' automatic placement half
    # of the rest; a report draws an attention figure per scheme and task (benchmarks/results/suite_time.md).
    longest = max((len(t) for row in grid for panel in row if panel for t in (*panel.keys, *panel.queries)), default=1)
    below, left, top, bar = 0.06 * longest + 0.7, 0.06 * longest + 0.45, 0.7, 1.1
    bottom = below - 0.3  # no panel title under the last row
    width, height = n_cols * (size + left) + bar, n_rows * size + (n_rows - 1) * below + bottom + top
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width, height), squeeze=False,
                             gridspec_kw={"left": left / width, "right": 1 - bar / width, "bottom": bottom / height,
                                          "top": 1 - top / height, "wspace": left / size, "hspace": below / size})
    for ax, panel in zip(axes.flat, (panel for row in grid for panel in row)):
        if panel is None:
            ax.axis("off")
            continue
        image = ax.imshow(panel.weights, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        ax.grid(False)
        ax.set_xticks(range(len(panel.keys)), panel.keys, rotation=90, fontsize=6)
        ax.set_yticks(range(len(panel.queries)), panel.queries, fontsize=6)
        ax.set_title(panel.title, fontsize=9)
        if panel.ylabel:
            ax.set_ylabel(panel.ylabel, fontsize=8)
        if panel.xlabel:
            ax.set_xlabel(panel.xlabel, fontsize=8)
    fig.colorbar(image, cax=fig.add_axes((1 - 0.85 / width, bottom / height, 0.12 / width, 1 - (bottom + top) / height)),
                 label="attention weight")
    fig.suptitle(title, fontsize=11, y=1 - 0.15 / height)
    return save(fig, path, tight=False)


def band(ax, x, stats, colour, label: str | None = None, *, alpha: float = 0.15, edge: bool = False, **line):
    """One scheme's mean over seeds as a line (``line``: its style) over the seeds' min–max as a band; ``stats``:
    ``mean``, ``min`` and ``max`` by ``x``. ``edge``: the band keeps matplotlib's edge line."""
    ax.plot(x, stats["mean"], color=colour, label=label, **line)
    ax.fill_between(x, stats["min"], stats["max"], color=colour, alpha=alpha, **({} if edge else {"lw": 0}))


def seed_band(rows: pd.DataFrame, by: str, column: str = "value") -> pd.DataFrame:
    """Mean, min and max over seeds of ``column`` by ``by`` (a column again)."""
    return rows.groupby(by)[column].agg(["mean", "min", "max"]).reset_index()


def draw_curves(curves: pd.DataFrame, schemes: list[str], panels: list[tuple[str, str | None]], path: Path, *,
                log: bool = False, sharey: bool = False, ylabel: str | None = None, title: str | None = None) -> Path:
    """Curves by training step, one panel per (column, panel title) of ``panels``, from per-seed rows (columns pe,
    seed, step and the panels' columns): per scheme the mean over seeds, band = min–max over seeds."""
    palette = scheme_palette()
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 4.2), sharey=sharey, squeeze=False)
    axes = axes[0]
    for ax, (column, panel_title) in zip(axes, panels):
        for scheme in schemes:
            sel = curves[curves["pe"] == scheme].dropna(subset=[column])
            stats = seed_band(sel, "step", column)
            band(ax, stats["step"], stats, palette[scheme], scheme, edge=True, lw=1.4)
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


def draw_by_length(panels: dict[str, pd.DataFrame], schemes: list[str], trained: dict[str, float], path: Path, *,
                   xlabel: str, ylabel: str, title: str, chance: dict[str, float | dict[int, float]] | None = None,
                   log: bool = False) -> Path:
    """A panel per entry of ``panels`` ({panel title: rows with columns pe, seed, length, value}), two to a row: per
    scheme the mean over seeds (line; an evaluation-time variant dashed or dotted in its scheme's colour) over the
    seeds' min–max (band); the lengths up to ``trained[panel]`` shaded and the y axis 0–1 (accuracies; on log axes,
    for perplexities, the training length dashed), ``chance[panel]`` dotted where given; ``title`` and one legend
    above, every scheme once."""
    colours = palette_with_variants(schemes)
    present = set().union(*(rows["pe"].unique() for rows in panels.values()))
    cols, named = min(2, len(panels)), [s for s in schemes if s in present]
    n_rows, top = -(-len(panels) // cols), 0.25 * (1 + -(-len(named) // 7)) + 0.15  # inches: title and legend
    # laid out by hand, in inches (``tight_layout`` measured every tick label: most of the figure's time): each
    # panel's title above it, its x label below it, the y label and tick labels left of the first column
    panel_w, panel_h, left, right, gap_x, gap_y, bottom = 5.3, 2.55, 0.8, 0.15, 0.3, 0.85, 0.6
    width, height = cols * panel_w + (cols - 1) * gap_x + left + right, \
        n_rows * panel_h + (n_rows - 1) * gap_y + top + 0.3 + bottom
    fig, axes = plt.subplots(n_rows, cols, figsize=(width, height), squeeze=False, sharey=True,
                             gridspec_kw={"left": left / width, "right": 1 - right / width, "bottom": bottom / height,
                                          "top": 1 - (top + 0.3) / height, "wspace": gap_x / panel_w,
                                          "hspace": gap_y / panel_h})
    for ax, (name, rows) in zip(axes.flat, panels.items()):
        if log:
            ax.axvline(trained[name], color="0.4", ls="--", lw=1)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
        else:
            ax.axvspan(0.5, trained[name] + 0.5, color="0.9", zorder=0)
            ax.set_xlim(0.5, rows["length"].max() + 0.5)
            ax.set_ylim(-0.03, 1.03)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # lengths are whole tokens
        # each scheme's mean, min and max over seeds in one group-by (a mask per scheme cost more than its drawing)
        by_scheme = dict(tuple(rows.groupby(["pe", "length"])["value"].agg(["mean", "min", "max"])
                               .groupby(level="pe", sort=False)))
        for scheme in (s for s in named if s in by_scheme):  # a task's own list may leave a scheme out
            stats = by_scheme[scheme].droplevel("pe")
            band(ax, stats.index, stats, colours[scheme], scheme, marker="o", ms=3, lw=1.6, ls=line_style(scheme))
        if chance and name in chance:  # a level, or one per length (recall's in-context floor)
            level = chance[name]
            if isinstance(level, dict):
                ax.plot(list(level), list(level.values()), color="0.4", ls=":", lw=1)
            else:
                ax.axhline(level, color="0.4", ls=":", lw=1)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel(xlabel)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    legend_above(fig, axes, top, title=title, layout=False)
    return save(fig, path)  # cropped to what it draws: a legend of many variants is wider than the panels


def legend_above(fig: plt.Figure, axes, top: float, *, ncol: int | None = None, fontsize: float = 9,
                 title: str | None = None, layout: bool = True) -> None:
    """One legend above every panel of ``axes`` (an array of axes), each label of any panel once (a legend in each
    panel hid its lines), ``ncol`` columns (default: up to 7) under ``title``; with ``layout``, the panels laid out
    in the figure less ``top`` inches at the top, which the caller sized for the legend's rows and the title
    (without it, the caller laid them out)."""
    handles = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), loc="upper center", ncol=ncol or max(1, min(len(handles), 7)),
               fontsize=fontsize, frameon=False, bbox_to_anchor=(0.5, 1.0), title=title,
               title_fontsize=10 if title else None)
    if layout:
        fig.tight_layout(rect=(0, 0, 1, 1 - top / fig.get_figheight()))
