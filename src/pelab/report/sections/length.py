"""The length-generalisation study: accuracy at every length, mean accuracy beyond N, a cross-task ranking."""

from __future__ import annotations

import pandas as pd

from pelab.analysis.length_ranking import ranking
from pelab.report import length_figures
from pelab.report.context import ReportContext
from pelab.report.tables import markdown_table, seed_values
from pelab.stats import summarize
from pelab.tasks import get_task

TOKEN_FIGURE, EXACT_FIGURE = "length_token_accuracy.png", "length_exact_match.png"


def length_tasks(ctx: ReportContext) -> list[str]:
    from pelab.tasks.length.task import LengthTask

    return [t for t in ctx.params.tasks if isinstance(get_task(t), LengthTask) and ctx.has_task(t)]


def chance_level(ctx: ReportContext, task: str) -> float:
    from pelab.tasks.length.data.problems import PROBLEMS

    return 1.0 / PROBLEMS[get_task(task).problem].alphabet(ctx.cfg(task).data.n_symbols)


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
    length_figures.accuracy_by_length(records, tasks, schemes + variants, train_max, chance, "token_accuracy",
                                      ctx.figure(TOKEN_FIGURE))
    length_figures.accuracy_by_length(records, tasks, schemes + variants, train_max, chance, "exact_match",
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
    longest_trained = max(get_task(t).row_length(ctx.cfg(t).data, ctx.cfg(t).data.train_max) for t in tasks)
    if "learned" in schemes:
        notes.append(f"`learned` has {cfg.options('learned').max_positions} rows so that every evaluated position "
                     f"has one; rows past the longest trained row ({longest_trained} tokens) never receive a gradient, "
                     "so beyond N it reads untrained (initial) rows.")
    if "fire" in schemes:
        fire = cfg.options("fire")
        notes.append(f"`fire` starts its threshold L at {fire.threshold:g} (the paper's 512 exceeds every length here "
                     "and would normalise all positions by the constant ψ(512), switching its interpolation off); "
                     "in the encoder it keeps the sign of i − j and normalises by the pair's farther position; "
                     "one FIRE module serves every layer (the reference code builds one per layer).")
    randomized = [s for s in schemes if s.startswith("rand_")]
    if variants:
        notes.append("`rope+PI` and `rope+NTK` are the `rope` runs scored beyond N with position interpolation "
                     "(positions × L/T) and NTK-aware base scaling (base × (T/L)^(d/(d−2))), T the row length and L "
                     "the longest trained row: evaluation-time extensions, no retraining (not in the ranking).")
    if randomized:
        notes.append(", ".join(f"`{s}`" for s in randomized) + " give a sequence of length T a sorted random "
                     f"subset of T positions from [0, {cfg.options(randomized[0]).max_position}) in training "
                     "(Ruoss et al. 2023) and at evaluation too: a row keeps one draw (a generated answer reads "
                     "its prefix at every step), and the test sequences of each length are split into "
                     f"{cfg.eval.position_draws} groups, each at its own fixed draw, so one draw's luck does not "
                     "decide a length's score and every run is scored at the same positions.")
    return [
        "## Length generalisation",
        "",
        f"Each task is trained on input lengths 1..N (N = {cfg.data.train_max}) and scored at every length "
        f"1..M (M = {cfg.data.test_max}), {cfg.data.n_test} sequences per length (at the trained lengths none of "
        f"them occurs in training). Tasks named `<problem>` use the bidirectional encoder and read the answer at "
        f"blank positions after the input (Ruoss et al. 2023); `<problem>_causal` use a decoder-only model with a "
        f"causal mask that generates the answer after a separator, greedily, from its own outputs (Kazemnejad et "
        f"al. 2023). Model: {cfg.model.n_layers} layers, d = {cfg.model.d_model}, {cfg.model.n_heads} heads; "
        f"{cfg.train.steps} steps of {cfg.train.batch_size} sequences of one length each, drawn uniformly from "
        f"1..N; the same data, batch order and initial weights for every scheme (seeds pair across schemes).",
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
