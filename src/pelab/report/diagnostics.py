"""Why schemes fail beyond their training lengths: the attention diagnostics that evaluation's per-run probe
writes (``pelab.probe``), read from the records, against each task's score beyond the training lengths.

Reads records only (split ``probe``); runs no model. The prose is the template ``templates/diagnostics.md``; the
numbers and the sentences that name schemes are generated.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection

from pelab.analysis.diagnostics import (BINS, COMPARED, RISE_MARGIN, beyond_score, changes, reading, relative_lengths,
                                       slow_pairs, window_null)
from pelab.report.context import ReportContext
from pelab.report.render import fill, render
from pelab.report.style import band, legend_above, save, scheme_palette
from pelab.report.tables import markdown_table
from pelab.stats import format_mean_sd, summarize

FIGURE, ROPE_FIGURE = "diagnostics_by_length.png", "diagnostics_rope_frequencies.png"
PANELS = dict(zip(COMPARED, ("entropy (nats)", "first-token share", "attended distance (tokens)")))


def draw_by_length(rows: pd.DataFrame, tasks: list[str], path: Path) -> Path:
    """Per task and diagnostic: each scheme's queries before the training length (solid) and from it on (dashed),
    by row length; the seeds' min–max as bands.

    Drawn for its size: at the full profile's 18 tasks × 27 schemes it holds 54 panels and about 2,900 bands. Every
    panel's bands are one PolyCollection (a ``fill_between`` per band was half the figure's time) and the panels are
    laid out by hand in inches (``tight_layout`` measured every tick label of every panel: most of the rest;
    benchmarks/results/suite_time.md, 2026-12-03 (25))."""
    palette = scheme_palette()
    # every band's mean, min and max over seeds in one pass: a mask and a group-by per band took most of the figure's
    # time at the default study's 17 tasks × 27 schemes (benchmarks/results/suite_time.md, 2026-11-28 (5))
    stats = {key: group.droplevel(["task", "pe", "metric"])
             for key, group in rows.groupby(["task", "pe", "metric", "ratio"], sort=True)["value"]
             .agg(["mean", "min", "max"]).groupby(level=["task", "pe", "metric"], sort=False)}
    named = list(dict.fromkeys(rows["pe"]))
    ncol = min(len(named), 7)
    # inches: the legend's rows above; each panel's title above it, its tick labels (and the last row's axis label)
    # below it, its y tick labels left of it
    top, panel_w, panel_h, gap_y, left, right, bottom = 0.25 * -(-len(named) // ncol) + 0.2, 3.3, 1.9, 0.7, 0.6, \
        0.15, 0.75
    width = len(PANELS) * panel_w + (len(PANELS) - 1) * left + left + right
    height = len(tasks) * panel_h + (len(tasks) - 1) * gap_y + top + 0.3 + bottom
    fig, axes = plt.subplots(len(tasks), len(PANELS), figsize=(width, height), squeeze=False,
                             gridspec_kw={"left": left / width, "right": 1 - right / width, "bottom": bottom / height,
                                          "top": 1 - (top + 0.3) / height, "wspace": left / panel_w,
                                          "hspace": gap_y / panel_h})
    for r, task in enumerate(tasks):
        mine = rows[rows["task"] == task]
        for c, (metric, title) in enumerate(PANELS.items()):
            ax = axes[r, c]
            polygons, colours = [], []
            for scheme in dict.fromkeys(mine["pe"]):
                for which, style in zip(BINS, ("-", "--")):
                    found = stats.get((task, scheme, f"{metric}_{which}"))
                    if found is None:
                        continue
                    x = found.index.to_numpy(dtype=float)
                    ax.plot(x, found["mean"], color=palette[scheme], label=scheme if which == "within" else None,
                            marker="o" if which == "within" else "x", ms=3, lw=1.4, ls=style)
                    # the band: along the top edge, back along the bottom (fill_between's polygon)
                    polygons.append(np.column_stack([np.r_[x, x[::-1]],
                                                     np.r_[found["max"].to_numpy(), found["min"].to_numpy()[::-1]]]))
                    colours.append(palette[scheme])
            ax.add_collection(PolyCollection(polygons, facecolors=colours, alpha=0.15, linewidths=0))
            ax.axvline(1.0, color="0.4", ls="--", lw=1)
            ax.set_xscale("log", base=2)
            ratios = sorted(mine["ratio"].unique())
            ax.set_xticks(ratios, [f"{r:.2g}" for r in ratios], fontsize=8)
            ax.tick_params(axis="y", labelsize=8)
            ax.minorticks_off()
            ax.set_title(f"{task}: {title}" if c == 0 else title, fontsize=9)
            if r == len(tasks) - 1:
                ax.set_xlabel("row length / training length")
    legend_above(fig, axes, top, ncol=ncol, layout=False)
    return save(fig, path, tight=False)


def change_table(rows: pd.DataFrame, records: pd.DataFrame, task: str) -> tuple[str, str]:
    """The table of one task and its generated reading: in the longest probed rows, each diagnostic of the queries
    before the training length → of those from it on."""
    score = beyond_score(records, task)
    found, low, high = changes(rows, records, task, [f"{m}_{b}" for m in COMPARED for b in BINS], score)
    header = ["scheme"] + ([score.label] if score else []) + [f"{PANELS[m]}: within → beyond L" for m in COMPARED]
    longest = {s: {m: v[1] for m, v in c.diagnostics.items()} for s, c in found.items()}
    table = [[f"`{scheme}`"] + ([format_mean_sd(summarize(c.score))] if score else [])
             + [f"{format_mean_sd(longest[scheme][m + '_within'], 2)} → {format_mean_sd(longest[scheme][m + '_beyond'], 2)}"
                for m in COMPARED]
             for scheme, c in found.items()]
    sel = rows[rows["task"] == task]
    tokens = int(sel["tokens"].max())
    null = window_null(tokens, round(tokens / high))["attn_entropy"] if causal(records, task) else 0.0
    r = reading(found, score, null)
    extremes = [(which, s, r.scores[s], *(f"{longest[s][m + '_within']['mean']:.2f} → "
                                          f"{longest[s][m + '_beyond']['mean']:.2f}" for m in COMPARED))
                for which, s in (("best", r.ranked[0]), ("worst", r.ranked[-1]))] if r.ranked else []
    text = fill("diagnostics_reading.md", low=low, high=high, null=signed(null) if null == null else "–",
                spread=r.rises[r.most] - r.rises[r.least] > RISE_MARGIN, margin=RISE_MARGIN, diluted=list(r.diluted),
                most=r.most, rise_most=signed(r.rises[r.most]),
                least=r.least, rise_least=signed(r.rises[r.least]), sink=r.sink, sink_value=r.sink_value,
                extremes=extremes, label=score.label if score else "", rho=r.rho, n=len(found),
                same_score=next(iter(r.scores.values())) if score and not r.ranked else None)
    return markdown_table(header, table), text


def causal(records: pd.DataFrame, task: str) -> bool:
    """Whether ``task``'s model is causal, as its evaluation recorded it (a length task's fact ``causal``; a task that
    records none is read as causal). The window null is a causal model's: an encoder's query sees every key at
    every length, so a perfect extrapolator's entropy does not rise between the bins and its null is 0."""
    found = records[(records["task"] == task) & (records["split"] == "task") & (records["metric"] == "causal")]
    return found.empty or bool(found["value"].iloc[0])


def signed(value: float) -> str:
    """+0.05, -0.11; a change that rounds to zero as ±0.00."""
    return "±0.00" if round(value, 2) == 0 else f"{value:+.2f}"


def draw_rope(probe: pd.DataFrame, tasks: list[str], trained: dict[str, float], path: Path) -> Path:
    """A panel per task, four to a row (the full profile's 17 tasks in one row were too narrow to read), one legend
    above: each rotary scheme's share of q·k norm by the period of the pair. Laid out by hand in inches, as
    ``draw_by_length`` is."""
    palette = scheme_palette()
    cols = min(4, len(tasks))
    n_rows = -(-len(tasks) // cols)
    named = list(dict.fromkeys(probe["pe"]))
    ncol = min(len(named), 2 * cols, 6)
    # inches: the legend's rows, each panel's title, the x labels below the lowest row, the y label and ticks left
    top, panel_w, panel_h, gap_x, gap_y, left, bottom = 0.25 * -(-len(named) // ncol) + 0.15, 3.0, 2.5, 0.5, 0.75, \
        0.85, 0.65
    width = cols * panel_w + (cols - 1) * gap_x + left + 0.2
    height = n_rows * panel_h + (n_rows - 1) * gap_y + top + 0.3 + bottom
    fig, axes = plt.subplots(n_rows, cols, figsize=(width, height), squeeze=False,
                             gridspec_kw={"left": left / width, "right": 1 - 0.2 / width, "bottom": bottom / height,
                                          "top": 1 - (top + 0.3) / height, "wspace": gap_x / panel_w,
                                          "hspace": gap_y / panel_h})
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    for ax, task in zip(axes.flat, tasks):
        sel = probe[probe["task"] == task]
        for scheme in dict.fromkeys(sel["pe"]):
            mine = sel[sel["pe"] == scheme]
            share = mine[mine["metric"].str.endswith("_share")].groupby("metric")["value"].agg(["mean", "min", "max"])
            periods = mine[mine["metric"].str.endswith("_period")].groupby("metric")["value"].mean()
            x = periods.reindex(share.index.str.replace("_share", "_period")).values
            band(ax, x, share, palette[scheme], scheme, marker="o", ms=3, lw=1.4)
        ax.axvline(trained[task], color="0.4", ls="--", lw=1)
        ax.set_xscale("log")
        ax.tick_params(labelsize=8)
        ax.set_title(task, fontsize=9)
    for ax in axes.flat[max(0, len(tasks) - cols):len(tasks)]:  # the lowest panel of each column
        ax.set_xlabel("period of the pair (positions)")
    for ax in axes[:, 0]:
        ax.set_ylabel("share of q·k norm")
    legend_above(fig, axes, top, ncol=ncol, fontsize=8, layout=False)
    return save(fig, path, tight=False)


def rope_table(ctx: ReportContext, probe: pd.DataFrame) -> str:
    """Per task and rotary scheme, the pairs slower than the training length and their share; draws the figure.
    "" where no run has rotary pairs."""
    bands = probe[probe["metric"].str.startswith("rope_band_")]
    if bands.empty:
        return ""
    tasks = list(dict.fromkeys(bands["task"]))
    trained = probe[probe["metric"] == "trained_length"].groupby("task")["value"].max().to_dict()
    draw_rope(bands, tasks, trained, ctx.figure(ROPE_FIGURE))
    table = []
    for task in tasks:
        sel = bands[bands["task"] == task]
        for scheme in dict.fromkeys(sel["pe"]):
            n, shares = slow_pairs(sel[sel["pe"] == scheme], trained[task])
            # none slower (a small base: rope_theta10): every pair turns within L, no share to sum
            table.append([task, f"`{scheme}`", str(n), format_mean_sd(summarize(shares), 2) if shares else "–"])
    return markdown_table(["task", "scheme", "pairs slower than L", "their share"], table)


def section(ctx: ReportContext) -> list[str]:
    probe = ctx.records[ctx.records["split"] == "probe"]
    if probe.empty:
        return []
    rows = relative_lengths(probe)
    tasks = list(dict.fromkeys(rows["task"]))
    draw_by_length(rows, tasks, ctx.figure(FIGURE))
    per_task = [dict(zip(("table", "reading"), change_table(rows, ctx.records, task)), name=task) for task in tasks]
    return render("diagnostics.md", tasks=per_task, rope_table=rope_table(ctx, probe), image=ctx.image,
                  figure=FIGURE, rope_figure=ROPE_FIGURE)
