"""Collect the per-scheme evaluation records of the schemes in params into one tidy table, the
metrics file ``dvc metrics`` reads, and the curve files ``dvc plots`` reads.

Only the schemes listed in ``pe.schemes`` are read, so results of other schemes that are still on
disk from earlier runs never leak into a report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pelab import io
from pelab.config import Params
from pelab.stats import summarize

RECORD_COLUMNS = ["task", "pe", "seed", "split", "length", "metric", "value"]

# metric name in records -> name in metrics.json, per (task, split)
TRANSLATION_HEADLINE = ["bleu_beam", "chrf_beam", "bleu_greedy", "chrf_greedy", "nltk_bleu_beam"]
HEADLINE = {
    ("copy", "test"): ["exact_match", "token_accuracy"],
    ("copy", "test_long"): ["exact_match", "token_accuracy"],
    ("translation", "test_2016_flickr"): TRANSLATION_HEADLINE,  # Multi30k
    ("translation", "test_2017_flickr"): TRANSLATION_HEADLINE,
    ("translation", "test"): TRANSLATION_HEADLINE,  # IWSLT2017
    ("translation", "val"): ["loss"],
}


def load_records(results_dirs: dict[str, Path], schemes: tuple[str, ...]) -> pd.DataFrame:
    """Concatenate ``<results_dir>/<scheme>/records.jsonl`` for every task and listed scheme."""
    frames = []
    for task, results_dir in results_dirs.items():
        for scheme in schemes:
            path = Path(results_dir) / scheme / "records.jsonl"
            if not path.exists():
                raise FileNotFoundError(f"no evaluation records for task {task!r}, scheme {scheme!r} at {path}")
            frames.append(pd.DataFrame(io.read_jsonl(path)))
    records = pd.concat(frames, ignore_index=True)
    records["length"] = records["length"].astype(str)
    first = [c for c in RECORD_COLUMNS if c in records.columns]
    return records[first + [c for c in records.columns if c not in first]]


def load_curves(results_dirs: dict[str, Path], schemes: tuple[str, ...]) -> pd.DataFrame:
    frames = []
    for task, results_dir in results_dirs.items():
        for scheme in schemes:
            frames.append(pd.read_csv(Path(results_dir) / scheme / "curves.csv"))
    return pd.concat(frames, ignore_index=True)


def metrics_summary(records: pd.DataFrame) -> dict:
    """{task: {scheme: {"<split>_<metric>_mean"|_sd|_ci_low|_ci_high: x, "n_seeds": n}}} over seeds."""
    out: dict = {}
    overall = records[records["length"] == "all"]
    for (task, scheme), group in overall.groupby(["task", "pe"], sort=False):
        entry: dict = {}
        for (split, metric), rows in group.groupby(["split", "metric"], sort=False):
            if metric not in HEADLINE.get((task, split), []):
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
    params: Params, results_dirs: dict[str, Path], metrics_path: Path, records_path: Path, plots_dir: Path
) -> None:
    records = load_records(results_dirs, params.schemes)
    curves = load_curves(results_dirs, params.schemes)
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
