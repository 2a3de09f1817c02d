"""Does the ranking survive per-scheme tuning? The schemes ranked at the task's shared learning rate and at each
scheme's own rate chosen on validation (``pelab.runner.tune``), read from ``reports/tuning.json``
(``pelab.tuned_ranking``): the sweep, both orders, the paired difference, best over seeds (randomized-PE study)
and the mean reciprocal rank over a study's tuned tasks (NoPE study)."""

from __future__ import annotations

from typing import Any

from pelab.report.context import ReportContext
from pelab.report.render import fill, render
from pelab.report.tables import format_p, markdown_table


def _num(value: float | None, digits: int, sign: str = "") -> str:
    return "–" if value is None else f"{value:{sign}.{digits}f}"  # None: undefined (one seed, a diverged run)


def _fmt(entry: dict[str, Any], digits: int) -> str:
    return f"{_num(entry['mean'], digits)} ± {_num(entry['sd'], digits)}"


def task_lines(task: str, table: dict[str, Any], order: tuple[str, ...], grid: list[float]) -> dict[str, str]:
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
    moved = [s for s, e in schemes.items() if e["chosen_scale"] != 1.0]
    reading = fill("tuning_reading.md", tau=table["kendall_tau"], moved=moved, n=len(schemes), low=grid[0],
                   high=grid[-1], order={way: sorted(schemes, key=lambda s, w=way: (ranks[f"{w}_mean"][s], s))
                                         for way in ("shared", "tuned")},
                   edge=[s for s in moved if schemes[s]["chosen_scale"] in (grid[0], grid[-1])])
    return {"name": task, "split": table["split"], "metric": table["metric"], "reading": reading,
            "better": "higher" if table["higher_is_better"] else "lower", "table": markdown_table(header, rows)}


def section(ctx: ReportContext) -> list[str]:
    tuning = ctx.tuning
    if not tuning or not tuning["tasks"]:
        return render("tuning.md", tuned=False)
    n, mrr = len(tuning["seeds"]), []
    for study, table in tuning["mrr"].items():
        if len(table["tasks"]) >= 2:
            order = sorted(table["shared"], key=lambda s: -table["tuned"][s])
            mrr.append({"name": study, "tasks": table["tasks"], "table": markdown_table(
                ["scheme", "MRR, shared rate", "MRR, tuned rate"],
                [[f"`{s}`", f"{table['shared'][s]:.3f}", f"{table['tuned'][s]:.3f}"] for s in order])})
    return render("tuning.md", tuned=True, seed=tuning["seed"], scales=" / ".join(f"{s:g}" for s in tuning["scales"]),
                  seeds=tuning["seeds"], min_p=2 / 2**n, n=n, mrr=mrr,
                  tasks=[task_lines(task, tuning["tasks"][task], ctx.params.schemes_of(task), sorted(tuning["scales"]))
                         for task in ctx.params.tune.tasks if task in tuning["tasks"]])
