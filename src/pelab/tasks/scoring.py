"""What scores a task's finished runs, kept apart from what trains them: each task package's ``evaluate.py`` defines
``Scoring``, a subclass of the class here (evaluation, the per-run probe's rows, the report's captures, and the
fine-tunes of finished runs, ``runner.recalibrate``), found by convention (``scoring``).

**The rule** (the one place it is said): nothing that training executes imports a task's ``evaluate`` module. The
runner reaches it only through ``scoring``, which imports it by name, and the import closure follows that name for
the stages that score runs, never for what a kept run is trained from (``closure.SCORING_REGISTRY``): so editing a
task's evaluation, probe, captures or fine-tunes re-scores its runs and retrains none. A method here may use the
task's training code (``self.task``: its batches, validation, row lengths); the task never uses this.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pelab.tasks.base import Task, TaskConfig


class Scoring:
    """The scoring half of one task (``task``)."""

    def __init__(self, task: Task) -> None:
        self.task = task

    def evaluate(self, cfg: TaskConfig, model: nn.Module, data: Any, device: torch.device,
                 out_dir: Path) -> list[dict[str, Any]]:
        """Tidy rows {split, length, metric, value} (the runner adds task, pe, seed); may write files into
        ``out_dir`` (translations, examples)."""
        raise NotImplementedError(f"task {self.task.name!r} defines no evaluation")

    def probe(self, cfg: TaskConfig, data: Any):
        """The rows the per-run probe reads (``pelab.probe.Probe``: token rows per length, in-range first, and the
        longest training row), or None for a task whose model the probe does not read (translation)."""
        return None

    def captures(self, cfg: TaskConfig, model: nn.Module, data: Any, device: torch.device) -> dict[str, Any] | None:
        """What the report draws from this run's model (attention on an example, layer-0 logits; tensors on the
        CPU), saved by evaluation as ``probe.pt`` beside the records (``pelab.probe.captures``); None: nothing."""
        return None

    # ---------------------------------------------------------------------------------- recalibration
    def recalibrations(self, cfg: TaskConfig, scheme: str) -> list[Any]:
        """The methods each trained run of ``scheme`` is fine-tuned with after training (``runner.recalibrate``; the
        LM's: ``tasks/lm/recalibrate.py``), each with ``name``, ``label`` and the split ``suffix`` of its records.
        None by default."""
        return []

    def recalibration(self, cfg: TaskConfig, data: Any, method: Any, seed: int, model: nn.Module):
        """(the fine-tune's task config, the model to train: ``model``'s weights with the method in place, its
        next_batch, its loss) for one method of ``recalibrations``."""
        raise NotImplementedError(f"task {self.task.name!r} has no recalibration")

    def recalibration_validation(self, cfg: TaskConfig, data: Any, device: torch.device):
        """The held-out loss a fine-tune (``cfg``: the config ``recalibration`` returns) keeps its best step on: the
        task's ``validation`` by default."""
        return self.task.validation(cfg, data, device)

    def recalibrated_model(self, cfg: TaskConfig, model: nn.Module, method: Any) -> nn.Module:
        """``model`` (a run's, or a fine-tuned run's: its weights loaded) with ``method``'s module in place, fixed at
        the factor ``cfg`` sets for the task's trained length."""
        raise NotImplementedError(f"task {self.task.name!r} has no recalibration")

    def evaluate_recalibrated(self, cfg: TaskConfig, model: nn.Module, data: Any, device: torch.device,
                              suffix: str) -> list[dict[str, Any]]:
        """Tidy rows of a fine-tuned run (or of a run read with a method's module), every split with ``suffix``."""
        raise NotImplementedError(f"task {self.task.name!r} has no recalibration")


def scoring_module(task: type[Task]) -> str:
    """``pelab.tasks.<package>.evaluate`` for a task class of ``pelab.tasks.<package>``."""
    return f"{task.__module__.rsplit('.', 1)[0]}.evaluate"


def scoring(task: Task) -> Scoring:
    """The ``Scoring`` of ``task``'s package (its ``evaluate.py``), bound to it."""
    return importlib.import_module(scoring_module(type(task))).Scoring(task)
