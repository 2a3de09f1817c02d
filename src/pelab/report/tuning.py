"""Does the ranking survive per-scheme tuning? The schemes ranked at the task's shared learning rate and at each
scheme's own rate chosen on validation (``pelab.runner.tune``), read from ``reports/tuning.json``
(``pelab.tuned_ranking``): the sweep, both orders, the paired difference, best over seeds (randomized-PE study)
and the mean reciprocal rank over a study's tuned tasks (NoPE study)."""

from __future__ import annotations

from typing import Any

from pelab.report.context import ReportContext
from pelab.report.tables import format_p, markdown_table

INTRO = ("Each scheme of a tuned task trains seed {seed} at {scales} times the task's shared learning rate on "
         "the task's tuning data: the copy and length tasks hold out part of their training sequences as its "
         "validation split, translation and the LM study use their validation split; no test row is read for the "
         "choice. The scale with the lowest final validation loss is chosen (a tie goes to the shared rate), then "
         "seeds {seeds} train at it on the whole training split, as the shared-rate runs do, and are scored the same "
         "way. "
         "Seeds pair across the two ways (same data order and initial weights), so each row's tuned − shared "
         "difference is paired, with the exact sign-flip p (smallest possible {min_p:.4f} at n = {n}). Ranks: 1 = "
         "best by the mean over seeds; *best of seeds* is the randomized-PE study's statistic (max over seeds, min "
         "for a perplexity).")
OFF = ("Every scheme of this study trained at its task's shared learning rate: params `tune` lists no task (the "
       "full profile tunes every task; `-S 'tune.length_tasks=[reverse]'` tunes one).")


def _num(value: float | None, digits: int, sign: str = "") -> str:
    return "–" if value is None else f"{value:{sign}.{digits}f}"  # None: undefined (one seed, a diverged run)


def _fmt(entry: dict[str, Any], digits: int) -> str:
    return f"{_num(entry['mean'], digits)} ± {_num(entry['sd'], digits)}"


def task_lines(task: str, table: dict[str, Any], order: tuple[str, ...], grid: list[float]) -> list[str]:
    """``order``: the study's schemes, in the order params lists them; ``grid``: the sweep's scales."""
    schemes, ranks = {s: table["schemes"][s] for s in order if s in table["schemes"]}, table["ranks"]
    scales = [f"x{s:g}" for s in grid]  # the keys of each scheme's val_loss (pelab.runner.tune.scale_name)
    digits = 2 if table["metric"].startswith(("bleu", "chrf", "ppl")) else 3
    rows = []
    for scheme, e in schemes.items():
        p = e["difference"]["p"]
        rows.append([f"`{scheme}`", " / ".join("diverged" if e["val_loss"][s] is None else f"{e['val_loss'][s]:.4f}"
                                               for s in scales),
                     f"{e['chosen_lr']:.3g} ({e['chosen_scale']:g}×)",
                     f"{_fmt(e['shared'], digits)} ({ranks['shared_mean'][scheme]:g})",
                     f"{_fmt(e['tuned'], digits)} ({ranks['tuned_mean'][scheme]:g})",
                     f"{_num(e['difference']['mean'], digits, '+')} (p {format_p(float('nan') if p is None else p)})",
                     f"{_num(e['shared']['best'], digits)} ({ranks['shared_best'][scheme]:g}) → "
                     f"{_num(e['tuned']['best'], digits)} ({ranks['tuned_best'][scheme]:g})"])
    header = ["scheme", f"validation loss {' / '.join(scales)}", "chosen rate", "shared rate (rank)",
              "tuned rate (rank)", "tuned − shared", "best of seeds, shared → tuned"]
    order = {way: sorted(schemes, key=lambda s, w=way: (ranks[f"{w}_mean"][s], s)) for way in ("shared", "tuned")}
    tau = table["kendall_tau"]
    same = order["shared"] == order["tuned"]
    reading = (f"The order by mean is {'the same' if same else 'not the same'} both ways"
               + ("" if same else f": shared {' > '.join(order['shared'])}; tuned {' > '.join(order['tuned'])}")
               + (f" (Kendall's τ {tau['mean']:.2f} by mean, {tau['best']:.2f} by best of seeds)."
                  if tau["mean"] is not None and tau["best"] is not None else "."))
    moved = [s for s, e in schemes.items() if e["chosen_scale"] != 1.0]
    if not moved:
        reading += " Every scheme's sweep kept the shared rate."
    else:
        every = len(moved) == len(schemes)
        named = "every scheme" if every else ", ".join(f"`{s}`" for s in moved)
        reading += f" The sweep moved the rate of {named}" + ("." if every else "; the others keep the shared rate.")
    edge = [s for s, e in schemes.items() if e["chosen_scale"] != 1.0 and e["chosen_scale"] in (grid[0], grid[-1])]
    if edge:
        reading += (f" {', '.join(f'`{s}`' for s in edge)} chose an end of the grid ({grid[0]:g}× or {grid[-1]:g}×): "
                    "the best rate may lie beyond it (a wider `tune.scales` would tell).")
    return [f"**{task}**, {table['split']} {table['metric']} ({'higher' if table['higher_is_better'] else 'lower'} "
            "is better):", "", markdown_table(header, rows), "", reading, ""]


def section(ctx: ReportContext) -> list[str]:
    tuning = ctx.tuning
    lines = ["## Does the ranking survive per-scheme learning rates?", ""]
    if not tuning or not tuning["tasks"]:
        return lines + [OFF, ""]
    n = len(tuning["seeds"])
    lines += [INTRO.format(seed=tuning["seed"], scales=" / ".join(f"{s:g}" for s in tuning["scales"]),
                           seeds=tuning["seeds"], min_p=2 / 2**n, n=n), ""]
    for task in (t for t in ctx.params.tune.tasks if t in tuning["tasks"]):
        lines += task_lines(task, tuning["tasks"][task], ctx.params.schemes_of(task), sorted(tuning["scales"]))
    for study, mrr in tuning["mrr"].items():
        if len(mrr["tasks"]) < 2:
            continue
        order = sorted(mrr["shared"], key=lambda s: -mrr["tuned"][s])
        lines += [f"**Mean reciprocal rank over the {study} study's tuned tasks** ({', '.join(mrr['tasks'])}; by "
                  "mean over seeds):", "",
                  markdown_table(["scheme", "MRR, shared rate", "MRR, tuned rate"],
                                 [[f"`{s}`", f"{mrr['shared'][s]:.3f}", f"{mrr['tuned'][s]:.3f}"] for s in order]), ""]
    return lines
