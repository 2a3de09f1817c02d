"""What every report section reads, in one place: params, the tidy records and curves from ``reports/``,
and trained models through the runner's one loader (``pelab.runner.checkpoint.load_run``)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from pelab import io
from pelab.params import Params
from pelab.runner.checkpoint import RUN_FILE, load_run, run_dir


class ReportContext:
    def __init__(self, params: Params, records: pd.DataFrame, curves: pd.DataFrame, runs_root: Path,
                 results_root: Path | None, data_root: Path | None, figures_dir: Path) -> None:
        self.params = params
        self.records = records
        self.curves = curves
        self.runs_root = Path(runs_root)
        self.results_root = None if results_root is None else Path(results_root)
        self.data_root = None if data_root is None else Path(data_root)
        self.figures_dir = Path(figures_dir)
        self.link = self.figures_dir.name
        self.schemes = list(params.schemes)
        self.seeds = list(params.seeds)
        self.seed = self.seeds[0]  # the run drawn in single-model figures
        self._models: dict[tuple[str, str, int], torch.nn.Module] = {}

    # configuration ---------------------------------------------------------------------------------
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

    def model(self, task: str, scheme: str, seed: int) -> torch.nn.Module:
        key = (task, scheme, seed)
        if key not in self._models:
            self._models[key] = load_run(self.run_path(task, scheme, seed)).model
        return self._models[key]

    def result_path(self, task: str, scheme: str, seed: int) -> Path | None:
        return None if self.results_root is None else run_dir(self.results_root, task, scheme, seed)

    @cached_property
    def translation_data(self):
        """The prepared translation corpus (tokenizer, sentences), or None without ``data_root``."""
        if self.data_root is None or not (self.data_root / "translation" / "meta.json").exists():
            return None
        from pelab.tasks.translation.data import load_prepared

        return load_prepared(self.data_root / "translation")

    # figures ---------------------------------------------------------------------------------------
    def figure(self, name: str) -> Path:
        return self.figures_dir / name

    def image(self, alt: str, name: str) -> str:
        return f"![{alt}]({self.link}/{name})"
