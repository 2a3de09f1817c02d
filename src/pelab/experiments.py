"""Experiments side by side, narrow: what ``dvc exp show`` holds, as one table a terminal can show.

``dvc exp show`` gives a column to every param of params.yaml and every metric file: the composed (task, scheme)
items the stages loop over (``StudyRecord.runs_key``) alone are a few hundred, and every metric file is per (task,
scheme), so at pelab's size it prints some 400 columns, "…" in each. Here each experiment is a **column** and each
row one thing that differs: first the params that differ between the experiments shown (the composed items left
out: they follow from the lists and options), then each (task, scheme, metric) whose value differs, or every one
with ``all_metrics``. Read from ``dvc exp show --json`` (DVC 3's layout: a baseline per row with its experiments).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METRICS_DIR = "reports/metrics"  # reports/metrics/<task>/<scheme>.json (the aggregate stage's key metrics)
MISSING = "–"


@dataclass
class Experiment:
    name: str  # "workspace", the baseline's branch or short rev, or the experiment's name
    params: dict[str, Any] = field(default_factory=dict)  # flat: "copy.train.steps" -> 25
    metrics: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (task, scheme, metric) -> value


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        return {k: v for key, value in data.items() for k, v in _flat(value, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): data}


def _composed_keys() -> tuple[str, ...]:
    from pelab.studies import STUDIES

    return tuple(k for s in STUDIES for k in (s.runs_key, s.tuned_runs_key) if k)


def _experiment(name: str, data: dict[str, Any], composed: tuple[str, ...]) -> Experiment:
    exp = Experiment(name)
    for file, values in (data.get("params") or {}).items():
        for key, value in _flat((values or {}).get("data") or {}).items():
            if key.split(".", 1)[0] not in composed:
                exp.params[key if file == "params.yaml" else f"{file}:{key}"] = value
    for file, values in (data.get("metrics") or {}).items():
        parts = Path(file).parts
        if len(parts) < 2 or Path(file).suffix != ".json" or not file.startswith(METRICS_DIR + "/"):
            continue
        task, scheme = parts[-2], Path(file).stem
        for metric, value in _flat((values or {}).get("data") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                exp.metrics[(task, scheme, metric)] = float(value)
    return exp


def read(entries: list[dict[str, Any]]) -> list[Experiment]:
    """Every row of ``dvc exp show --json``: the workspace, each baseline and each of its experiments, in order."""
    composed = _composed_keys()
    out = []
    for entry in entries:
        rev = str(entry.get("rev", ""))
        name = entry.get("name") or (rev if rev == "workspace" else rev[:7])
        out.append(_experiment(name, entry.get("data") or {}, composed))
        for group in entry.get("experiments") or []:
            for rev in group.get("revs") or []:
                out.append(_experiment(rev.get("name") or str(rev.get("rev", ""))[:7], rev.get("data") or {},
                                       composed))
    return out


def _cell(value: Any, width: int = 24) -> str:
    text = MISSING if value is None else f"{value:.4g}" if isinstance(value, float) else json.dumps(value) \
        if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def table(experiments: list[Experiment], all_metrics: bool = False, task: str | None = None) -> str:
    """A Markdown table: one column per experiment; the params that differ, then the metrics (``all_metrics``: also
    those equal in every experiment; ``task``: only its metrics)."""
    if not experiments:
        return "no experiments (dvc exp show lists none)"
    params = sorted({k for e in experiments for k in e.params})
    changed = [k for k in params if len({json.dumps(e.params.get(k), sort_keys=True) for e in experiments}) > 1]
    metrics = sorted({k for e in experiments for k in e.metrics if task is None or k[0] == task})
    if not all_metrics:
        metrics = [k for k in metrics if len({e.metrics.get(k) for e in experiments}) > 1]
    header = ["", *(e.name for e in experiments)]
    rows = [[f"`{k}`", *(_cell(e.params.get(k)) for e in experiments)] for k in changed]
    rows += [[f"{t} · {s} · {m}", *(_cell(e.metrics.get((t, s, m))) for e in experiments)] for t, s, m in metrics]
    if not rows:
        return "the experiments differ in no param and no metric"
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def show(repo: str | Path = ".", all_metrics: bool = False, task: str | None = None) -> str:
    """``table`` of what ``dvc exp show --json`` prints in ``repo``."""
    proc = subprocess.run(["dvc", "exp", "show", "--json"], cwd=repo, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"dvc exp show failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return table(read(json.loads(proc.stdout or "[]")), all_metrics, task)
