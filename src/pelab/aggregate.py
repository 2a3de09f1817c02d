"""Gather the records of this study's runs — training cost and curves (written by training), evaluation
metrics (written by evaluation), and each task's comparisons of a run with the reference scheme's run of its seed
(``Task.paired_records``: sacreBLEU's paired bootstrap of the translations) — into one tidy table, the headline
``dvc metrics`` reads (reports/headline.json: the claims' verdicts, each task's ranking metric), the key metrics
(reports/metrics/<task>/<scheme>.json, a handful of numbers each), a summary with every
headline statistic (reports/summary.json), and the curve files ``dvc plots`` reads.

Only the (task, scheme, seed) runs of params are read, so runs of other schemes or seeds that are still on
disk from earlier experiments never leak into a report.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from pelab import io
from pelab.params import Params
from pelab.runner.checkpoint import run_dir
from pelab.stats import metric_summary
from pelab.tasks import get_task, task_names
from pelab.tuned_ranking import tuning_table

RECORD_COLUMNS = ["task", "pe", "seed", "split", "length", "metric", "value"]


def _runs(params: Params):
    for task in params.tasks:
        for scheme in params.schemes_of(task):
            for seed in params.seeds:
                yield task, scheme, seed


def load_records(params: Params, runs_root: Path, results_root: Path) -> pd.DataFrame:
    """Training records and evaluation records of every run of the study, and each task's records that compare its
    runs with the reference scheme's (``Task.paired_records``: translation's paired bootstrap), in one tidy frame."""
    rows: list[dict] = []  # one frame of every row at the end: a frame per file took most of the stage
    for task, scheme, seed in _runs(params):
        for path in (run_dir(runs_root, task, scheme, seed) / "train_records.jsonl",
                     run_dir(results_root, task, scheme, seed) / "records.jsonl"):
            if not path.exists():
                raise FileNotFoundError(f"no records for task {task!r}, scheme {scheme!r}, seed {seed} at {path}")
            rows += io.read_jsonl(path)
    for task in params.tasks:  # a task's statistics of its runs side by side (translation's paired bootstrap)
        rows += get_task(task).paired_records(params.schemes_of(task), params.seeds, params.reference,
                                              results_root) or []
    records = pd.DataFrame(rows)
    records["length"] = records["length"].astype(str)
    first = [c for c in RECORD_COLUMNS if c in records.columns]
    return records[first + [c for c in records.columns if c not in first]]


def load_curves(params: Params, runs_root: Path) -> pd.DataFrame:
    runs = list(_runs(params))
    frames = [pd.read_csv(run_dir(runs_root, task, scheme, seed) / "history.csv") for task, scheme, seed in runs]
    curves = pd.concat(frames, ignore_index=True)
    counts = [len(frame) for frame in frames]  # each run's rows labelled once, not a column assigned per frame
    labels = pd.DataFrame([run for run, count in zip(runs, counts) for _ in range(count)],
                          columns=["task", "pe", "seed"])
    return pd.concat([labels, curves.drop(columns=[c for c in labels.columns if c in curves.columns])], axis=1)


def _finite(value: float) -> float | None:
    """JSON has no NaN: an undefined statistic (sd of one seed) is written as null."""
    return value if math.isfinite(value) else None


def summary_table(records: pd.DataFrame) -> dict:
    """{task: {scheme: {split: {metric: {mean, sd, ci_low, ci_high, n}}}}} over seeds (``metric_summary``, as in
    the report), for every headline metric of the task (``Task.headline``); undefined statistics are null.
    Written to reports/summary.json."""
    out: dict = {}
    overall = records[records["length"] == "all"]
    # the headline rows only, before grouping (a group per (split, metric) of every row was most of the table)
    wanted = {(task, split, metric) for task in overall["task"].unique()
              for split, metrics in get_task(task).headline.items() for metric in metrics}
    keys = pd.MultiIndex.from_frame(overall[["task", "split", "metric"]])
    headline = overall[keys.isin(list(wanted))]
    for task, scheme in overall[["task", "pe"]].drop_duplicates().itertuples(index=False):
        out.setdefault(task, {})[scheme] = {}
    for (task, scheme, split, metric), rows in headline.groupby(["task", "pe", "split", "metric"], sort=False):
        stats = metric_summary(rows.sort_values("seed")["value"].tolist(), metric)
        out[task][scheme].setdefault(split, {})[metric] = {k: v if k == "n" else _finite(float(v))
                                                            for k, v in stats.items()}
    return out


def key_metrics(summary: dict) -> dict:
    """{task: {scheme: {name: mean over seeds}}}: the handful of numbers per (task, scheme) that
    ``dvc metrics show`` / ``dvc exp show`` print (``Task.key_metrics``; the seed count is in the summary)."""
    out: dict = {}
    for task, schemes in summary.items():
        wanted = get_task(task).key_metrics
        for scheme, splits in schemes.items():
            entry: dict = {}
            for name, (candidates, metric) in wanted.items():
                found = next((splits[s][metric] for s in candidates if metric in splits.get(s, {})), None)
                if found is not None:
                    entry[name] = round(found["mean"], 4)
            out.setdefault(task, {})[scheme] = entry
    return out


def headline(records: pd.DataFrame, summary: dict) -> dict:
    """reports/headline.json, the one file ``dvc metrics`` and ``dvc exp show`` read (a few numbers per study, so
    that experiments compare in a terminal): every claim's verdict and measured contrast (``pelab.analysis.claims``),
    and each task's ranking metric (``Task.ranked_by``), the mean over seeds per scheme. Per-run and per-scheme
    numbers stay in reports/metrics/, summary.json and records.csv."""
    from pelab.analysis.claims import verdicts

    claims = {claim.id: {"verdict": verdict.status, "contrast": None if verdict.contrast is None
                         else _finite(float(f"{verdict.contrast['mean']:.4g}"))}  # 4 significant digits
              for claim, verdict in verdicts(records)}
    tasks: dict = {}
    for task, schemes in key_metrics(summary).items():
        name, _ = get_task(task).ranked_by
        tasks[task] = {name: {scheme: entry[name] for scheme, entry in schemes.items() if name in entry}}
    return {"claims": claims, **tasks}


def curve_means(curves: pd.DataFrame, value: str) -> pd.DataFrame:
    """Mean over seeds of ``value`` per (task, pe, step), as rows for ``dvc plots``."""
    grouped = curves.groupby(["task", "pe", "step"], sort=False)[value]
    return grouped.mean().reset_index().rename(columns={"pe": "scheme"})


def study_record(params: Params) -> dict:
    """reports/study.json: the study's params as plain data (``Params.to_dict``) and what each task says of itself
    (``Task.statement``: a length problem's statement), what the report reads instead of running task code."""
    statements = {t: said for t in params.tasks if (said := get_task(t).statement())}
    return {**params.to_dict(), "task_statements": statements}


def aggregate(params: Params, runs_root: Path, results_root: Path, metrics_dir: Path, summary_path: Path,
              records_path: Path, plots_dir: Path, study_path: Path | None = None,
              tuning_path: Path | None = None, headline_path: Path | None = None) -> None:
    """Write headline_path (``headline``: the claims' verdicts and each task's ranking metric, what ``dvc metrics``
    reads), metrics_dir/<task>/<scheme>.json (key metrics), summary_path (every headline statistic),
    records_path (every record), plots_dir (curves for ``dvc plots``), study_path (the study's params as plain
    data, ``Params.to_dict``, and each task's ``statement``: what the report reads instead of running task code) and tuning_path (the
    ranking at the shared and at the tuned learning rates, ``pelab.tuned_ranking``)."""
    records = load_records(params, runs_root, results_root)
    curves = load_curves(params, runs_root)
    summary = summary_table(records)
    with io.atomic_dir(metrics_dir) as tmp:
        for task, schemes in key_metrics(summary).items():
            for scheme, entry in schemes.items():
                io.write_json(tmp / task / f"{scheme}.json", entry)
    io.write_json(summary_path, summary)
    if headline_path is not None:
        io.write_json(headline_path, headline(records, summary))
    if study_path is not None:
        io.write_json(study_path, study_record(params))
    if tuning_path is not None:
        io.write_json(tuning_path, tuning_table(params, runs_root, results_root))
    records_path.parent.mkdir(parents=True, exist_ok=True)
    records.to_csv(records_path, index=False)
    with io.atomic_dir(plots_dir) as tmp:
        curves.to_csv(tmp / "curves_per_seed.csv", index=False)
        for task, group in curves.groupby("task", sort=False):  # the curves each task draws (Task.plots)
            for suffix, (curve, _, _) in get_task(task).plots().items():
                if curve in group and group[curve].notna().any():
                    means = curve_means(group.dropna(subset=[curve]), curve)
                    means.drop(columns="task").to_csv(tmp / f"{task}_{suffix}.csv", index=False)
        # dvc.yaml declares every registered task's plots (pelab.pipeline.write.plots): one this study leaves out gets
        # its header only, so `dvc plots show` and `dvc plots diff` read every declared plot without an error
        for task in task_names():
            for suffix, (curve, _, _) in get_task(task).plots().items():
                if not (tmp / f"{task}_{suffix}.csv").exists():
                    pd.DataFrame(columns=["scheme", "step", curve]).to_csv(tmp / f"{task}_{suffix}.csv", index=False)
