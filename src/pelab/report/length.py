"""The length-generalisation study's section of the report: accuracy by length per task and scheme, in and
beyond the training lengths, and the schemes ranked across tasks.

Cross-task ranking of schemes by accuracy beyond the training lengths: mean reciprocal rank (MRR), as the
NoPE study ranks schemes across its tasks (Kazemnejad et al. 2023, https://arxiv.org/abs/2305.19466, §4).

For each task the schemes are ranked by a score (rank 1 = best; ties share the mean of their ranks); a
scheme's MRR is the mean over tasks of 1/rank. Its stability: the same ranking done on each seed's runs
alone (the seeds pair across schemes), giving one MRR per seed, and how often the scheme ranks first.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from scipy.stats import rankdata

from pelab.positional import Usage, draws_positions
from pelab.report.common import scheme_choices
from pelab.report.context import ReportContext
from pelab.report.style import save, scheme_palette
from pelab.report.tables import markdown_table, seed_values
from pelab.stats import summarize

TOKEN_FIGURE, EXACT_FIGURE = "length_token_accuracy.png", "length_exact_match.png"


def length_tasks(ctx: ReportContext) -> list[str]:
    return [t for t in ctx.params.length_tasks if ctx.has_task(t)]


def chance_level(ctx: ReportContext, task: str) -> float:
    """Chance per answer symbol, as the task's evaluation recorded it."""
    return ctx.fact(task, "chance")


ROPE_VARIANTS = {"pi": "rope+PI", "ntk": "rope+NTK"}  # evaluation-time extensions of the rope runs


def with_rope_variants(records: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The ``rope`` runs scored with position interpolation / NTK-aware scaling (splits test_pi, beyond_pi, …) as
    pseudo-schemes ``rope+PI`` / ``rope+NTK`` with the splits ``test`` / ``beyond``; and the names present.
    Selected by scheme name and split: no other scheme's rows join them."""
    frames, names = [records], []
    for suffix, name in ROPE_VARIANTS.items():
        sel = records[(records["pe"] == "rope") & records["split"].isin([f"test_{suffix}", f"beyond_{suffix}"])]
        if not sel.empty:
            frames.append(sel.assign(pe=name, split=sel["split"].str.replace(f"_{suffix}", "", regex=False)))
            names.append(name)
    return pd.concat(frames, ignore_index=True), names


def _cell(values: list[float]) -> str:
    s = summarize(values)
    return f"{s['mean']:.3f}" + ("" if s["sd"] != s["sd"] else f" ± {s['sd']:.3f}")


def reading(ctx: ReportContext, task: str) -> str:
    """Sentences from the numbers: who fits the training lengths, who holds up beyond, who is at chance."""
    schemes, records = list(ctx.params.length_schemes), ctx.records
    beyond = {s: summarize(seed_values(records, task, s, "beyond", "token_accuracy"))["mean"] for s in schemes}
    inside = {s: summarize(seed_values(records, task, s, "in", "exact_match"))["mean"] for s in schemes}
    chance = chance_level(ctx, task)
    best = max(beyond, key=beyond.get)
    fit = [s for s in schemes if inside[s] >= 0.9]
    near_chance = [s for s in schemes if beyond[s] <= chance + 0.05]
    parts = [f"**{task}.** " + (f"{len(fit)} of {len(schemes)} schemes fit the trained lengths (exact match ≥ 0.9 "
                                f"on unseen sequences): {', '.join(f'`{s}`' for s in fit)}." if fit else
                                "No scheme reaches 0.9 exact match on unseen sequences of the trained lengths.")]
    parts.append(f"Beyond them the best token accuracy is `{best}`'s ({beyond[best]:.3f}; chance {chance:.2f}).")
    if near_chance:
        parts.append("At most 0.05 above chance beyond N: " + ", ".join(f"`{s}`" for s in near_chance) + ".")
    return " ".join(parts)


def section(ctx: ReportContext) -> list[str]:
    tasks = length_tasks(ctx)
    if not tasks:
        return []
    records, variants = with_rope_variants(ctx.records[ctx.records["task"].isin(tasks)])
    schemes = list(ctx.params.length_schemes)
    cfg = ctx.cfg(tasks[0])
    train_max = {t: ctx.cfg(t).data.train_max for t in tasks}
    chance = {t: chance_level(ctx, t) for t in tasks}
    draw_accuracy_by_length(records, tasks, schemes + variants, train_max, chance, "token_accuracy",
                                      ctx.figure(TOKEN_FIGURE))
    draw_accuracy_by_length(records, tasks, schemes + variants, train_max, chance, "exact_match",
                                      ctx.figure(EXACT_FIGURE))
    header = ["scheme", *(f"{t}: {where}" for t in tasks for where in ("in", "beyond"))]

    def row(name: str, metric: str, bold: bool) -> list[str]:
        cells = [f"`{name}`"]
        for t in tasks:
            inside = seed_values(records, t, name, "in", metric)
            beyond_cell = _cell(seed_values(records, t, name, "beyond", metric))
            cells += [_cell(inside) if inside else "–", f"**{beyond_cell}**" if bold else beyond_cell]
        return cells

    body = [row(name, "token_accuracy", True) for name in schemes + variants]
    exact = [row(name, "exact_match", False) for name in schemes + variants]
    beyond = records[(records["task"].isin(tasks)) & (records["split"] == "beyond")
                     & (records["metric"] == "token_accuracy") & (records["length"] == "all")]
    rank = ranking(beyond[beyond["pe"].isin(schemes)][["task", "pe", "seed", "value"]])
    rank_rows = [[f"`{s}`", f"{r['mrr']:.3f}", f"{r['mrr_mean']:.3f} ± {0 if r['mrr_sd'] != r['mrr_sd'] else r['mrr_sd']:.3f}",
                  f"{r['first']:.2f}"] for s, r in rank.iterrows()]
    notes = []
    longest_trained = int(max(ctx.fact(t, "longest_trained_row") for t in tasks))
    longest_eval = int(max(ctx.fact(t, "longest_eval_row") for t in tasks))
    notes += scheme_choices(ctx, tasks[0], schemes, Usage("the length study", longest_trained, longest_eval,
                                                          range(1, longest_trained)),
                            causal=all(ctx.fact(t, "causal") == 1.0 for t in tasks))
    randomized = [s for s in schemes if draws_positions(s)]
    if variants:
        notes.append("`rope+PI` and `rope+NTK` are the `rope` runs scored beyond N with position interpolation "
                     "(positions × L/T) and NTK-aware base scaling (base × (T/L)^(d/(d−2))), T the row length and L "
                     "the longest trained row: evaluation-time extensions, no retraining (not in the ranking).")
    if randomized:
        notes.append(", ".join(f"`{s}`" for s in randomized) + " are scored at fixed position draws: a row keeps one "
                     "draw (a generated answer reads its prefix at every step), and the test sequences of each length "
                     f"are split into {cfg.eval.position_draws} groups, each at its own fixed draw, so one draw's luck "
                     "does not decide a length's score and every run is scored at the same positions.")
    return [
        "## Length generalisation",
        "",
        f"Each task is trained on input lengths 1..N (N = {cfg.data.train_max}) and scored at every length "
        f"1..M (M = {cfg.data.test_max}), {cfg.data.n_test} sequences per length (at the trained lengths none of "
        f"them occurs in training). Tasks named `<problem>` use the bidirectional encoder and read the answer at "
        f"blank positions after the input (Ruoss et al. 2023); `<problem>_causal` use a decoder-only model with a "
        f"causal mask that generates the answer after a separator, greedily, from its own outputs (Kazemnejad et "
        f"al. 2023). Model: {cfg.model.n_layers} layers, d = {cfg.model.d_model}, {cfg.model.n_heads} heads; "
        f"{cfg.train.steps} steps of {cfg.train.batch_size} sequences of one length each, the length drawn "
        f"uniformly from 1..N by one schedule that every seed shares (so a scheme's seeds train as one stack; the "
        f"spread over seeds leaves out the variance of the length order), the sequences and initial weights by the "
        f"seed; the same data, batch order and initial weights for every scheme (seeds pair across schemes).",
        "",
        *(["**Choices that could favour a scheme.** " + " ".join(notes), ""] if notes else []),
        f"Mean token accuracy over the trained lengths (in) and beyond them (beyond, N+1..M; each length weighted "
        f"equally), mean ± sd over {len(ctx.seeds)} seeds:",
        "",
        markdown_table(header, body),
        "",
        "Exact match (whole answer right), in | beyond:",
        "",
        markdown_table(header, exact),
        "",
        *(reading(ctx, t) + "\n" for t in tasks),
        f"**Ranking across the {len(tasks)} tasks** by token accuracy beyond N: mean reciprocal rank (MRR, 1 = "
        "first on every task), the same ranking redone on each seed alone (mean ± sd over seeds), and the share "
        "of (task, seed) pairs in which the scheme is first:",
        "",
        markdown_table(["scheme", "MRR", "MRR per seed", "share first"], rank_rows),
        "",
        ctx.image("length generalisation, token accuracy", TOKEN_FIGURE),
        "",
        ctx.image("length generalisation, exact match", EXACT_FIGURE),
        "",
    ]


METRIC_LABELS = {"token_accuracy": "token accuracy of the answer", "exact_match": "exact match of the answer"}


def draw_accuracy_by_length(records: pd.DataFrame, tasks: list[str], schemes: list[str], train_max: dict[str, int],
                       chance: dict[str, float], metric: str, path: Path) -> Path:
    """Per task a panel: mean over seeds per length (line) with the seeds' min–max (band); lengths 1..N shaded;
    chance level dotted (token accuracy only)."""
    palette = scheme_palette()
    for variant in ("+PI", "+NTK"):  # RoPE's evaluation-time extensions: RoPE's colour, dashed / dotted
        palette[f"rope{variant}"] = palette["rope"]
    styles = {"rope+PI": "--", "rope+NTK": ":"}
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
            band = sel.groupby("length")["value"].agg(["mean", "min", "max"]).reset_index()
            ax.plot(band["length"], band["mean"], color=palette[scheme], lw=1.6, label=scheme,
                    ls=styles.get(scheme, "-"))
            ax.fill_between(band["length"], band["min"], band["max"], color=palette[scheme], alpha=0.15, lw=0)
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


def reciprocal_ranks(scores: dict[str, float]) -> dict[str, float]:
    """{scheme: score} (higher is better) -> {scheme: 1/rank}, ties at their mean rank."""
    names = list(scores)
    ranks = rankdata([-scores[n] for n in names], method="average")
    return {n: 1.0 / r for n, r in zip(names, ranks)}


def mean_reciprocal_rank(table: pd.DataFrame) -> pd.Series:
    """table: rows = tasks, columns = schemes, values = scores. Returns MRR per scheme."""
    rr = pd.DataFrame([reciprocal_ranks(row.to_dict()) for _, row in table.iterrows()], index=table.index)
    return rr.mean(axis=0)


def ranking(scores: pd.DataFrame) -> pd.DataFrame:
    """scores: columns task, pe, seed, value. Returns per scheme: ``mrr`` (ranking the seed means), ``mrr_mean``
    and ``mrr_sd`` (the ranking redone on each seed alone) and ``first`` (share of (task, seed) in which it is
    ranked first, ties counted), sorted by ``mrr``."""
    means = scores.groupby(["task", "pe"])["value"].mean().unstack("pe")
    overall = mean_reciprocal_rank(means)
    per_seed = {seed: mean_reciprocal_rank(group.pivot(index="task", columns="pe", values="value"))
                for seed, group in scores.groupby("seed")}
    by_seed = pd.DataFrame(per_seed)  # rows = schemes, columns = seeds
    firsts = []
    for _, group in scores.groupby(["task", "seed"]):
        best = group["value"].max()
        firsts.append({pe: float(v == best) for pe, v in zip(group["pe"], group["value"])})
    out = pd.DataFrame({"mrr": overall, "mrr_mean": by_seed.mean(axis=1), "mrr_sd": by_seed.std(axis=1, ddof=1),
                        "first": pd.DataFrame(firsts).mean(axis=0)})
    return out.sort_values("mrr", ascending=False)
