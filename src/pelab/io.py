"""Small helpers for the files the pipeline writes: atomic writes, JSON, CSV and JSON-lines."""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# A run's directory (``runs/<task>/<scheme>/seed_<k>/``, ``pelab.runner.checkpoint``) and its evaluation's
# (``results/<task>/<scheme>/seed_<k>/``): the file names every reader shares.
RUN_FILE, WEIGHTS = "run.json", "model.pt"
CHOICE_FILE = "choice.json"  # a learning-rate sweep's losses per scale and chosen rate (pelab.runner.tune)
PROBE_FILE = "probe.pt"  # the per-run probe's captures (``pelab.probe.captures``), beside records.jsonl


def run_dir(root: str | Path, task: str, scheme: str, seed: int) -> Path:
    """``root/<task>/<scheme>/seed_<seed>``: a run under ``runs/``, its evaluation under ``results/``."""
    return Path(root) / task / scheme / f"seed_{seed}"


@contextmanager
def atomic_dir(path: str | Path):
    """Yield a temporary sibling directory; on success it replaces ``path``, on error it is removed.

    A crashed or interrupted stage never leaves a half-written output behind. A process killed with SIGKILL
    cannot clean up: its temporary directory is removed by the next writer of ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)


def write_text_atomic(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(path: str | Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path) -> Any:
    with open(path) as f:
        return json.load(f)


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    write_text_atomic(path, "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_csv(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a CSV with numeric fields parsed as float."""
    def parse(value: str) -> Any:
        try:
            return float(value)
        except ValueError:
            return value

    with open(path, newline="") as f:
        return [{k: parse(v) for k, v in row.items()} for row in csv.DictReader(f)]


def write_csv(path: str | Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        raise ValueError(f"refusing to write an empty CSV to {path}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)
