"""The length-generalisation study's section of the report: accuracy by length per task and scheme, in and
beyond the training lengths, and the schemes ranked across tasks (mean reciprocal rank, ``pelab.analysis.ranking``).
"""

from __future__ import annotations

import pandas as pd

from pelab.analysis.paired import seed_summary, seed_values
from pelab.analysis.ranking import ranking
from pelab.analysis.variants import families, family_rows, variant_bases, with_variants
from pelab.positional import Usage, draws_positions
from pelab.report.common import scheme_choices, spread_over_seeds
from pelab.report.context import ReportContext
from pelab.report.layouts import layout_reading
from pelab.report.recalibration import Measure, recalibration_reading
from pelab.report.switches import switch_reading
from pelab.report.theta import length_theta_reading
from pelab.report.render import fill, render, sentences
from pelab.report.style import draw_by_length
from pelab.report.tables import markdown_table
from pelab.stats import format_mean_sd, summarize

STUDY = "length"  # the study this section reports (its record in pelab.studies)
TOKEN_FIGURE, EXACT_FIGURE = "length_token_accuracy.png", "length_exact_match.png"


def floors(ctx: ReportContext, task: str) -> dict[int, float]:
    """{n: the task's in-context floor at n pairs} as evaluation recorded it ({} for a task whose floor is chance)."""
    rows = ctx.records[(ctx.records["task"] == task) & (ctx.records["split"] == "task")
                       & (ctx.records["metric"] == "floor")].drop_duplicates("length")
    return dict(sorted(zip(rows["length"].astype(int), rows["value"].astype(float))))


def reading(ctx: ReportContext, task: str, chance: float) -> str:
    """Sentences from the numbers: who fits the training lengths, who holds up beyond, who is at ``chance`` (per
    answer symbol) or, where the task has one, at its in-context floor beyond N."""
    schemes, records = list(ctx.params.schemes_of(task)), ctx.records
    beyond = {s: seed_summary(records, task, s, "beyond", "token_accuracy")["mean"] for s in schemes}
    inside = {s: seed_summary(records, task, s, "in", "exact_match")["mean"] for s in schemes}
    best = max(beyond, key=beyond.get)
    retrieval = None
    if ctx.params.statements.get(task, {}).get("retrieval"):  # retrieves at every trained length: effective >= N
        n, threshold = ctx.cfg(task).data.train_max, ctx.cfg(task).eval.effective_threshold
        effective = {s: seed_values(records, task, s, "effective", "input_length") for s in schemes}
        token_in = {s: seed_summary(records, task, s, "in", "token_accuracy")["mean"] for s in schemes}
        retrieval = {"threshold": threshold, "n": n,
                     "every_seed": [s for s in schemes if effective[s] and min(effective[s]) >= n],
                     "not": [(s, token_in[s], sum(e >= n for e in effective[s]), len(effective[s])) for s in schemes
                             if not effective[s] or min(effective[s]) < n]}
    floor = ctx.fact(task, "floor_beyond") if floors(ctx, task) else None
    return fill("length_reading.md", task=task, n=len(schemes), fit=[s for s in schemes if inside[s] >= 0.9],
                best=best, best_accuracy=beyond[best], chance=chance, floor=floor,
                near_chance=[s for s in schemes if beyond[s] <= (chance if floor is None else floor) + 0.05],
                retrieval=retrieval)


def problem_statements(ctx: ReportContext, tasks: list[str], chance: dict[str, float]) -> list[str]:
    """Each problem's statement as it states itself (``Task.statement``, through reports/study.json), once for its
    tasks in both architectures, followed by what was measured of it: chance per answer symbol and, where evaluation
    recorded one, its in-context floor within and beyond N."""
    by_problem: dict[str, list[str]] = {}
    for task in tasks:
        if ctx.params.statements.get(task, {}).get("statement"):
            by_problem.setdefault(ctx.params.statements[task]["problem"], []).append(task)
    out = []
    for members in by_problem.values():
        said = ctx.params.statements[members[0]]["statement"]
        facts = [f"`{t}`: chance 1/{round(1 / chance[t])}" + (
            f", in-context floor {ctx.fact(t, 'floor_in'):.3f} within N, {ctx.fact(t, 'floor_beyond'):.3f} beyond"
            if floors(ctx, t) else "") for t in members]
        drawn = " (the figure draws the floor, dotted)" if any(floors(ctx, t) for t in members) else ""
        out.append(f"{said} Measured here{drawn}: {'; '.join(facts)}.")
    return out


FAR = "far"  # the lengths beyond a fine-tune's M·N (to test_max), derived here from the per-length rows


def with_far(records: pd.DataFrame, beyond: dict[str, int]) -> pd.DataFrame:
    """``records`` with split ``far``: per (task, scheme, seed, metric) the mean of the test split over the lengths
    above ``beyond[task]`` (each length weighted equally), where a task has such lengths."""
    frames = [records]
    for task, lowest in beyond.items():
        rows = records[(records["task"] == task) & (records["split"] == "test") & (records["length"] != "all")]
        rows = rows[rows["length"].astype(int) > lowest]
        if not rows.empty:
            means = rows.groupby(["task", "pe", "seed", "metric"], as_index=False)["value"].mean()
            frames.append(means.assign(split=FAR, length="all"))
    return pd.concat(frames, ignore_index=True)


def length_measure(task: str, multiple: int, train_max: int, test_max: int) -> Measure:
    """The length study's before/after reading (``report.recalibration``): token accuracy within N, and at the
    lengths beyond the fine-tune's M·N (``far``; beyond N where the fine-tune reaches the longest test length)."""
    m, n, longest = multiple, train_max, test_max
    if m * n < longest:
        return Measure(task, "token_accuracy", "in", FAR, False, 3, "token accuracy", f"on input lengths 1..{m * n}",
                       "within N", f"at {m * n + 1}..{longest}", f"beyond {m}N")
    return Measure(task, "token_accuracy", "in", "beyond", False, 3, "token accuracy", f"on input lengths 1..{m * n}",
                   "within N", f"at {n + 1}..{longest}", "beyond N")


def section(ctx: ReportContext) -> list[str]:
    tasks = [t for t in ctx.params.tasks_of(STUDY) if ctx.has_task(t)]
    if not tasks:
        return []
    records, variants = with_variants(ctx.records[ctx.records["task"].isin(tasks)])
    records = with_far(records, {t: ctx.cfg(t).eval.recalibrate_multiple * ctx.cfg(t).data.train_max for t in tasks})
    # every scheme a task runs with: the study's list, then those of the tasks with a list of their own
    schemes = list(dict.fromkeys([*ctx.params.studies[STUDY].schemes, *(s for t in tasks
                                                                         for s in ctx.params.schemes_of(t))]))
    ranked = [t for t in tasks if t in ctx.params.with_study_schemes(STUDY)]  # run with the study's whole list
    own = {t: ctx.params.schemes_of(t) for t in tasks if t not in ranked}
    # no ranking where every scheme is at or below the task's in-context floor beyond N: none of them does the task
    unread = [t for t in ranked if floors(ctx, t) and all(
        seed_summary(records, t, s, "beyond", "token_accuracy")["mean"] <= ctx.fact(t, "floor_beyond")
        for s in ctx.params.schemes_of(t) if seed_values(records, t, s, "beyond", "token_accuracy"))]
    ranked = [t for t in ranked if t not in unread]
    cfg = ctx.cfg(tasks[0])
    train_max = {t: ctx.cfg(t).data.train_max for t in tasks}
    chance = {t: ctx.fact(t, "chance") for t in tasks}  # per answer symbol, as evaluation recorded it
    floor_lines = {t: floors(ctx, t) or chance[t] for t in tasks}  # a task's in-context floor by length, or chance
    by_length = records[(records["split"] == "test") & (records["length"] != "all")]
    by_length = by_length.assign(length=by_length["length"].astype(int))
    for metric, figure, label in (("token_accuracy", TOKEN_FIGURE, "token accuracy of the answer"),
                                  ("exact_match", EXACT_FIGURE, "exact match of the answer")):
        rows = by_length[by_length["metric"] == metric]
        draw_by_length({t: rows[rows["task"] == t] for t in tasks}, schemes, train_max, ctx.figure(figure),
                       xlabel="input length n", ylabel=label, chance=floor_lines if metric == "token_accuracy" else None,
                       title=f"Length generalisation: {label} (line = mean over seeds, band = min–max; grey = training "
                       "lengths" + (", dotted = chance or the task's in-context floor)" if metric == "token_accuracy"
                                    else ")"))
    header = ["scheme", *(f"{t}: {where}" for t in tasks for where in ("in", "beyond"))]

    def row(name: str, metric: str, bold: bool) -> list[str]:
        cells = [f"`{name}`"]
        for t in tasks:  # "–" where a row has no runs on a task (recall's spread axis on the other problems)
            inside, beyond = (seed_values(records, t, name, where, metric) for where in ("in", "beyond"))
            past = format_mean_sd(summarize(beyond)) if beyond else "–"
            bolded = f"**{past}**" if bold and beyond else past
            cells += [format_mean_sd(summarize(inside)) if inside else "–", bolded]
        return cells

    def effective(name: str) -> list[str]:
        return [f"`{name}`"] + [spread_over_seeds(seed_values(records, t, name, "effective", "input_length"), 1)
                                for t in tasks]

    beyond = records[(records["task"].isin(ranked)) & (records["split"] == "beyond")
                     & (records["metric"] == "token_accuracy") & (records["length"] == "all")]
    study_schemes = ctx.params.studies[STUDY].schemes
    rank = ranking(beyond[beyond["pe"].isin(study_schemes)][["task", "pe", "seed", "value"]]) if ranked else None
    rank_rows = [[f"`{s}`", f"{r['mrr']:.3f}",
                  f"{r['mrr_mean']:.3f} ± {0 if r['mrr_sd'] != r['mrr_sd'] else r['mrr_sd']:.3f}", f"{r['first']:.2f}"]
                 for s, r in (rank.iterrows() if rank is not None else ())]
    longest_trained = int(max(ctx.fact(t, "longest_trained_row") for t in tasks))
    longest_eval = int(max(ctx.fact(t, "longest_eval_row") for t in tasks))
    notes = scheme_choices(ctx, tasks[0], schemes, Usage("the length study", longest_trained, longest_eval,
                                                         range(1, longest_trained)),
                           causal=all(ctx.fact(t, "causal") == 1.0 for t in tasks))
    notes += sentences("length_choices.md", bases=variant_bases(variants), draws=cfg.eval.position_draws,
                       tempered=any(v.endswith("+logn") for v in variants),
                       randomized=[s for s in schemes if draws_positions(s)])
    return render(
        "length.md", data=cfg.data, model=cfg.model, train=cfg.train, notes=notes, n_seeds=len(ctx.seeds),
        token_table=markdown_table(header, [row(name, "token_accuracy", True) for name in schemes]),
        variant_tables=[(title, markdown_table(header, [row(name, "token_accuracy", "+" in name)
                                                        for name in family_rows(pairs)]))
                        for title, pairs in families(variants).items()],
        exact_table=markdown_table(header, [row(name, "exact_match", False) for name in schemes + variants]),
        effective_table=markdown_table(["scheme", *tasks], [effective(name) for name in schemes + variants]),
        threshold=cfg.eval.effective_threshold,
        problems=problem_statements(ctx, tasks, chance),
        readings=[reading(ctx, t, chance[t]) for t in tasks], n_tasks=len(ranked), own=own, image=ctx.image,
        unread=unread,
        recalibrations=[(t, *found) for t in tasks if (found := recalibration_reading(
            records, variants, length_measure(t, ctx.cfg(t).eval.recalibrate_multiple, ctx.cfg(t).data.train_max,
                                              ctx.cfg(t).data.test_max),
            ctx.cfg(t).eval.recalibrate_multiple, ctx.cfg(t).eval.recalibrate_share))],
        layouts=[text for t in tasks if (text := layout_reading(
            records, ctx.cfg(t), t, list(ctx.params.schemes_of(t)), "beyond", "token_accuracy",
            "token accuracy beyond N", False, causal=ctx.fact(t, "causal") == 1.0))] + [
            text for t in tasks if (text := length_theta_reading(
                records, ctx.cfg(t), t, list(ctx.params.schemes_of(t)), int(ctx.fact(t, "longest_trained_row")),
                int(ctx.fact(t, "longest_eval_row"))))] + [text for t in tasks if (text := switch_reading(
                    records, t, list(ctx.params.schemes_of(t)),
                    [("in", "token_accuracy", "token accuracy within N", False),
                                          ("beyond", "token_accuracy", "beyond N", False)]))],
        token_figure=TOKEN_FIGURE, exact_figure=EXACT_FIGURE,
        rank_table=markdown_table(["scheme", "MRR", "MRR per seed", "share first"], rank_rows))
