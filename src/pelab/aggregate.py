"""Gather the records of this study's runs — training cost and curves (written by training), evaluation
metrics (written by evaluation) — into one tidy table, the metrics file ``dvc metrics`` reads, and the curve
files ``dvc plots`` reads.

Only the (task, scheme, seed) runs of params are read, so runs of other schemes or seeds that are still on
disk from earlier experiments never leak into a report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pelab import io
from pelab.config import Params
from pelab.runner.checkpoint import run_dir
from pelab.stats import summarize
from pelab.tasks import get_task

RECORD_COLUMNS = ["task", "pe", "seed", "split", "length", "metric", "value"]


def _runs(params: Params):
    for task in params.tasks:
        for scheme in params.schemes:
            for seed in params.seeds:
                yield task, scheme, seed


def load_records(params: Params, runs_root: Path, results_root: Path) -> pd.DataFrame:
    """Training records and evaluation records of every run of the study, in one tidy frame."""
    frames = []
    for task, scheme, seed in _runs(params):
        for path in (run_dir(runs_root, task, scheme, seed) / "train_records.jsonl",
                     run_dir(results_root, task, scheme, seed) / "records.jsonl"):
            if not path.exists():
                raise FileNotFoundError(f"no records for task {task!r}, scheme {scheme!r}, seed {seed} at {path}")
            frames.append(pd.DataFrame(io.read_jsonl(path)))
    records = pd.concat(frames, ignore_index=True)
    records["length"] = records["length"].astype(str)
    first = [c for c in RECORD_COLUMNS if c in records.columns]
    return records[first + [c for c in records.columns if c not in first]]


def load_curves(params: Params, runs_root: Path) -> pd.DataFrame:
    frames = [pd.read_csv(run_dir(runs_root, task, scheme, seed) / "history.csv")
              .assign(task=task, pe=scheme, seed=seed) for task, scheme, seed in _runs(params)]
    curves = pd.concat(frames, ignore_index=True)
    first = ["task", "pe", "seed"]
    return curves[first + [c for c in curves.columns if c not in first]]


def metrics_summary(records: pd.DataFrame) -> dict:
    """{task: {scheme: {"<split>_<metric>_mean"|_sd|_ci_low|_ci_high: x, "n_seeds": n}}} over seeds."""
    out: dict = {}
    overall = records[records["length"] == "all"]
    for (task, scheme), group in overall.groupby(["task", "pe"], sort=False):
        entry: dict = {}
        for (split, metric), rows in group.groupby(["split", "metric"], sort=False):
            if metric not in get_task(task).headline.get(split, []):
                continue
            s = summarize(rows.sort_values("seed")["value"].tolist())
            prefix = metric if split == "test" else f"{split}_{metric}"
            entry.update({f"{prefix}_{k}": v for k, v in s.items() if k != "n"})
            entry["n_seeds"] = s["n"]
        out.setdefault(task, {})[scheme] = entry
    return out


def curve_means(curves: pd.DataFrame, value: str) -> pd.DataFrame:
    """Mean over seeds of ``value`` per (task, pe, step), as rows for ``dvc plots``."""
    grouped = curves.groupby(["task", "pe", "step"], sort=False)[value]
    return grouped.mean().reset_index().rename(columns={"pe": "scheme"})


def aggregate(
    params: Params, runs_root: Path, results_root: Path, metrics_path: Path, records_path: Path, plots_dir: Path
) -> None:
    records = load_records(params, runs_root, results_root)
    curves = load_curves(params, runs_root)
    io.write_json(metrics_path, metrics_summary(records))
    records_path.parent.mkdir(parents=True, exist_ok=True)
    records.to_csv(records_path, index=False)
    with io.atomic_dir(plots_dir) as tmp:
        curves.to_csv(tmp / "curves_per_seed.csv", index=False)
        for task, group in curve_means(curves, "loss").groupby("task", sort=False):
            group.drop(columns="task").to_csv(tmp / f"{task}_train_loss.csv", index=False)
        if "val_loss" in curves:  # tasks that log a validation loss (translation)
            logged = curves.dropna(subset=["val_loss"])
            for task, group in curve_means(logged, "val_loss").groupby("task", sort=False):
                group.drop(columns="task").to_csv(tmp / f"{task}_val_loss.csv", index=False)
