"""The ranking both ways, shared learning rate and per-scheme tuned rate (``pelab.runner.tune``), as plain data:
``reports/tuning.json``, written by the aggregate stage and read by the report.

Per tuned task, each scheme's sweep (validation loss per scale, the chosen rate) and its score on the task's
ranking metric (``Task.ranked_by``) per seed, both ways, with the paired tuned − shared difference (exact
sign-flip test; seeds pair because a seed fixes data order and shared initial weights, whatever the rate); the
order of the schemes both ways, by mean over seeds and by best over seeds (the randomized-PE study's statistic,
Ruoss et al. 2023), with Kendall's τ between the orders; per study, the mean reciprocal rank over its tuned
tasks (the NoPE study's statistic, Kazemnejad et al. 2023).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from scipy.stats import kendalltau, rankdata

from pelab import io
from pelab.io import CHOICE_FILE, run_dir
from pelab.params import Params
from pelab.stats import metric_summary, sign_flip_test
from pelab.tasks import get_task

WAYS = ("shared", "tuned")  # the runs at the task's shared rate (results/), at the chosen rate (results/tuned/)


def key_value(records: list[dict[str, Any]], splits: tuple[str, ...], metric: str) -> float:
    """The run's value of ``metric`` on the first of ``splits`` it has (length "all")."""
    for split in splits:
        for row in records:
            if row["split"] == split and row["metric"] == metric and str(row["length"]) == "all":
                return float(row["value"])
    raise ValueError(f"no {metric} on any of {list(splits)} in the run's records")


def ranks(scores: dict[str, float | None], higher_is_better: bool) -> dict[str, float]:
    """{scheme: rank} (1 = best), ties at their mean rank; an undefined score (None, NaN, ±inf) ranks last."""
    def cost(value: float | None) -> float:
        if value is None or not math.isfinite(value):
            return math.inf
        return -value if higher_is_better else value

    names = list(scores)
    return {n: float(r) for n, r in zip(names, rankdata([cost(scores[n]) for n in names], method="average"))}


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None  # JSON has no NaN or infinity


def task_ranking(params: Params, task: str, runs_root: Path, results_root: Path) -> dict[str, Any]:
    key, higher = get_task(task).ranked_by
    splits, metric = get_task(task).key_metrics[key]
    roots = {"shared": results_root, "tuned": results_root / "tuned"}
    schemes: dict[str, Any] = {}
    for scheme in params.schemes_of(task):
        choice = io.read_json(runs_root / "sweep" / task / scheme / CHOICE_FILE)
        values = {way: [key_value(io.read_jsonl(run_dir(root, task, scheme, seed) / "records.jsonl"), splits, metric)
                        for seed in params.seeds] for way, root in roots.items()}
        test = sign_flip_test(values["tuned"], values["shared"])
        schemes[scheme] = {
            **{k: choice[k] for k in ("val_loss", "chosen_scale", "chosen_lr", "shared_lr")},
            **{way: {"per_seed": [_number(x) for x in v], "best": _number(max(v) if higher else min(v)),
                     **{k: _number(float(x)) for k, x in metric_summary(v, metric).items() if k != "n"}}
               for way, v in values.items()},
            "difference": {"mean": _number(test["mean_diff"]), "p": _number(test["p"])},
        }
    order = {}
    for way in WAYS:
        for stat in ("mean", "best"):
            order[f"{way}_{stat}"] = ranks({s: e[way][stat] for s, e in schemes.items()}, higher)
    tau = {stat: (_number(float(kendalltau([order[f"shared_{stat}"][s] for s in schemes],
                                           [order[f"tuned_{stat}"][s] for s in schemes]).statistic))
                  if len(schemes) > 1 else None) for stat in ("mean", "best")}
    return {"key": key, "split": splits[0], "metric": metric, "higher_is_better": higher, "schemes": schemes,
            "ranks": order, "kendall_tau": tau}


def tuning_table(params: Params, runs_root: Path, results_root: Path) -> dict[str, Any]:
    """What ``reports/tuning.json`` holds (``tasks`` empty when params tune no task)."""
    tasks = {task: task_ranking(params, task, runs_root, results_root) for task in params.tune.tasks}
    mrr: dict[str, Any] = {}
    for study, values in params.studies.items():
        tuned = [t for t in values.tasks if t in tasks]
        if tuned:
            mrr[study] = {"tasks": tuned, **{way: {s: sum(1 / tasks[t]["ranks"][f"{way}_mean"][s] for t in tuned)
                                                   / len(tuned) for s in params.schemes_of(tuned[0])}
                                            for way in WAYS}}
    return {"scales": list(params.tune.scales), "seed": params.tune.seed, "seeds": list(params.seeds),
            "tasks": tasks, "mrr": mrr}
