"""The length-generalisation study's section of the report: accuracy by length per task and scheme, in and
beyond the training lengths, and the schemes ranked across tasks (mean reciprocal rank, ``pelab.analysis.ranking``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pelab.analysis.paired import seed_summary, seed_values
from pelab.analysis.ranking import ranking
from pelab.positional import Usage, draws_positions
from pelab.analysis.variants import variant_bases, with_variants
from pelab.report.common import line_style, palette_with_variants, scheme_choices
from pelab.report.context import ReportContext
from pelab.report.render import fill, render, sentences
from pelab.report.style import band, save, seed_band
from pelab.report.tables import markdown_table
from pelab.stats import format_mean_sd, summarize

TOKEN_FIGURE, EXACT_FIGURE = "length_token_accuracy.png", "length_exact_match.png"


def length_tasks(ctx: ReportContext) -> list[str]:
    return [t for t in ctx.params.length_tasks if ctx.has_task(t)]


def chance_level(ctx: ReportContext, task: str) -> float:
    """Chance per answer symbol, as the task's evaluation recorded it."""
    return ctx.fact(task, "chance")


def reading(ctx: ReportContext, task: str) -> str:
    """Sentences from the numbers: who fits the training lengths, who holds up beyond, who is at chance."""
    schemes, records = list(ctx.params.length_schemes), ctx.records
    beyond = {s: seed_summary(records, task, s, "beyond", "token_accuracy")["mean"] for s in schemes}
    inside = {s: seed_summary(records, task, s, "in", "exact_match")["mean"] for s in schemes}
    chance, best = chance_level(ctx, task), max(beyond, key=beyond.get)
    return fill("length_reading.md", task=task, n=len(schemes), fit=[s for s in schemes if inside[s] >= 0.9],
                best=best, best_accuracy=beyond[best], chance=chance,
                near_chance=[s for s in schemes if beyond[s] <= chance + 0.05])


def section(ctx: ReportContext) -> list[str]:
    tasks = length_tasks(ctx)
    if not tasks:
        return []
    records, variants = with_variants(ctx.records[ctx.records["task"].isin(tasks)])
    schemes = list(ctx.params.length_schemes)
    cfg = ctx.cfg(tasks[0])
    train_max = {t: ctx.cfg(t).data.train_max for t in tasks}
    chance = {t: chance_level(ctx, t) for t in tasks}
    for metric, figure in (("token_accuracy", TOKEN_FIGURE), ("exact_match", EXACT_FIGURE)):
        draw_accuracy_by_length(records, tasks, schemes + variants, train_max, chance, metric, ctx.figure(figure))
    header = ["scheme", *(f"{t}: {where}" for t in tasks for where in ("in", "beyond"))]

    def row(name: str, metric: str, bold: bool) -> list[str]:
        cells = [f"`{name}`"]
        for t in tasks:
            inside = seed_values(records, t, name, "in", metric)
            past = format_mean_sd(seed_summary(records, t, name, "beyond", metric))
            cells += [format_mean_sd(summarize(inside)) if inside else "–", f"**{past}**" if bold else past]
        return cells

    beyond = records[(records["task"].isin(tasks)) & (records["split"] == "beyond")
                     & (records["metric"] == "token_accuracy") & (records["length"] == "all")]
    rank = ranking(beyond[beyond["pe"].isin(schemes)][["task", "pe", "seed", "value"]])
    rank_rows = [[f"`{s}`", f"{r['mrr']:.3f}",
                  f"{r['mrr_mean']:.3f} ± {0 if r['mrr_sd'] != r['mrr_sd'] else r['mrr_sd']:.3f}", f"{r['first']:.2f}"]
                 for s, r in rank.iterrows()]
    longest_trained = int(max(ctx.fact(t, "longest_trained_row") for t in tasks))
    longest_eval = int(max(ctx.fact(t, "longest_eval_row") for t in tasks))
    notes = scheme_choices(ctx, tasks[0], schemes, Usage("the length study", longest_trained, longest_eval,
                                                         range(1, longest_trained)),
                           causal=all(ctx.fact(t, "causal") == 1.0 for t in tasks))
    notes += sentences("length_choices.md", bases=variant_bases(variants), draws=cfg.eval.position_draws,
                       randomized=[s for s in schemes if draws_positions(s)])
    return render(
        "length.md", data=cfg.data, model=cfg.model, train=cfg.train, notes=notes, n_seeds=len(ctx.seeds),
        token_table=markdown_table(header, [row(name, "token_accuracy", True) for name in schemes + variants]),
        exact_table=markdown_table(header, [row(name, "exact_match", False) for name in schemes + variants]),
        readings=[reading(ctx, t) for t in tasks], n_tasks=len(tasks), image=ctx.image, token_figure=TOKEN_FIGURE,
        exact_figure=EXACT_FIGURE, rank_table=markdown_table(["scheme", "MRR", "MRR per seed", "share first"],
                                                             rank_rows))


METRIC_LABELS = {"token_accuracy": "token accuracy of the answer", "exact_match": "exact match of the answer"}


def draw_accuracy_by_length(records: pd.DataFrame, tasks: list[str], schemes: list[str], train_max: dict[str, int],
                       chance: dict[str, float], metric: str, path: Path) -> Path:
    """Per task a panel: mean over seeds per length (line) with the seeds' min–max (band); lengths 1..N shaded;
    chance level dotted (token accuracy only)."""
    palette = palette_with_variants(schemes)  # an evaluation-time variant in its scheme's colour, dashed / dotted
    cols = 2 if len(tasks) > 1 else 1
    n_rows = (len(tasks) + cols - 1) // cols
    fig, axes = plt.subplots(n_rows, cols, figsize=(6.2 * cols, 3.3 * n_rows), squeeze=False, sharey=True)
    rows = records[(records["split"] == "test") & (records["metric"] == metric) & (records["length"] != "all")]
    rows = rows.assign(length=rows["length"].astype(int))
    for ax, task in zip(axes.flat, tasks):
        ax.axvspan(0.5, train_max[task] + 0.5, color="0.9", zorder=0)
        ax.text(0.7, 1.06, "trained lengths", fontsize=8, color="0.35", va="bottom")
        for scheme in schemes:
            sel = rows[(rows["task"] == task) & (rows["pe"] == scheme)]
            if sel.empty:
                continue
            stats = seed_band(sel, "length")
            band(ax, stats["length"], stats, palette[scheme], scheme, lw=1.6, ls=line_style(scheme))
        if metric == "token_accuracy" and task in chance:
            ax.axhline(chance[task], color="0.4", ls=":", lw=1)
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("input length n")
        ax.set_ylim(-0.03, 1.12)
        ax.set_xlim(0.5, rows[rows["task"] == task]["length"].max() + 0.5)
    for ax in axes[:, 0]:
        ax.set_ylabel(METRIC_LABELS[metric])
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 8), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    fig.suptitle(f"Length generalisation: {METRIC_LABELS[metric]} (line = mean over seeds, band = min–max; "
                 "grey = training lengths" + (", dotted = chance)" if metric == "token_accuracy" else ")"),
                 fontsize=10, y=1.04)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return save(fig, path)
