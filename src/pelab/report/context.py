"""What every report section reads, in one place: params, the tidy records and curves from ``reports/``, each
run's metadata and weights (``runs/``, as tensors) and what evaluation captured from its model (``results/``,
``probe.pt``, ``pelab.probe.captures``). The report runs no model and reads no data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import torch

from pelab import io
from pelab.io import PROBE_FILE, RUN_FILE, WEIGHTS, run_dir
from pelab.report.study import Study


class ReportContext:
    def __init__(self, params: Study, records: pd.DataFrame, curves: pd.DataFrame, runs_root: Path,
                 results_root: Path, figures_dir: Path, tuning: dict[str, Any] | None = None) -> None:
        self.params = params
        self.tuning = tuning  # reports/tuning.json (pelab.tuned_ranking), None if not given
        self.records = records
        self.curves = curves
        self.runs_root = Path(runs_root)
        self.results_root = Path(results_root)
        self.figures_dir = Path(figures_dir)
        self.link = self.figures_dir.name
        self.seeds = list(params.seeds)
        self.seed = self.seeds[0]  # the run drawn in single-model figures
        self._facts: dict[str, dict[tuple[str, str], float]] = {}  # split -> {(task, metric): value}, read once
        self._captures: dict[tuple[str, str, int], dict[str, Any] | None] = {}

    # configuration ---------------------------------------------------------------------------------
    def schemes_of(self, task: str) -> list[str]:
        """The schemes ``task`` runs: its study's list, or its own (``main_task_schemes``, ``length_task_schemes``)."""
        return list(self.params.schemes_of(task))

    def has_task(self, task: str) -> bool:
        return task in self.params.tasks and not self.records[self.records["task"] == task].empty

    def cfg(self, task: str):
        return self.params.task(task)

    @property
    def copy(self):
        return self.params.task("copy")

    # runs ------------------------------------------------------------------------------------------
    def run_path(self, task: str, scheme: str, seed: int) -> Path:
        return run_dir(self.runs_root, task, scheme, seed)

    def has_run(self, task: str, scheme: str, seed: int) -> bool:
        return (self.run_path(task, scheme, seed) / RUN_FILE).exists()

    def run_meta(self, task: str, scheme: str, seed: int) -> dict[str, Any]:
        return io.read_json(self.run_path(task, scheme, seed) / RUN_FILE)

    def weights(self, task: str, scheme: str, seed: int) -> dict[str, torch.Tensor]:
        """The run's state dict, read as tensors (the learned tables' figures)."""
        return torch.load(self.run_path(task, scheme, seed) / WEIGHTS, map_location="cpu", weights_only=True)

    def result_path(self, task: str, scheme: str, seed: int) -> Path:
        return run_dir(self.results_root, task, scheme, seed)

    def captures(self, task: str, scheme: str, seed: int) -> dict[str, Any] | None:
        """What evaluation captured from the run's model (``pelab.probe.captures``), or None if it has none."""
        key = (task, scheme, seed)
        if key not in self._captures:
            path = self.result_path(task, scheme, seed) / PROBE_FILE
            self._captures[key] = (torch.load(path, map_location="cpu", weights_only=True) if path.exists() else None)
        return self._captures[key]

    def captured_seeds(self, task: str, scheme: str) -> dict[int, dict[str, Any]]:
        """{seed: captures} of the scheme's runs that evaluation captured, in seed order."""
        return {seed: found for seed in self.seeds if (found := self.captures(task, scheme, seed)) is not None}

    def fact(self, task: str, metric: str, split: str = "task", required: bool = True) -> float | None:
        """A value evaluation wrote once per run about the task itself (chance, row lengths; the same in every run);
        None where it wrote none and the fact is not ``required``. Each split's facts are gathered once (a mask of
        every record per fact took seconds of a report)."""
        if split not in self._facts:
            rows = self.records[self.records["split"] == split].drop_duplicates(["task", "metric"])  # the first
            self._facts[split] = dict(zip(zip(rows["task"], rows["metric"]), rows["value"]))
        found = self._facts[split].get((task, metric))
        if found is None and not required:
            return None
        if found is None:
            raise ValueError(f"records hold no {split}/{metric} row for task {task!r}; re-run its evaluation")
        return float(found)

    # figures ---------------------------------------------------------------------------------------
    def figure(self, name: str) -> Path:
        return self.figures_dir / name

    def image(self, alt: str, name: str) -> str:
        return f"![{alt}]({self.link}/{name})"
