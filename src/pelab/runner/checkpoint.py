"""A run directory and the one way to read it back.

``runs/<task>/<scheme>/seed_<k>/``::

    model.pt                 weights (CPU state dict) at the logged step of lowest validation loss
    run.json                 task, scheme, seed, profile, the model section, the scheme's options, data info
    history.csv              per logged step: step, loss, lr and the validation loss (val_loss)
    train_records.jsonl      tidy rows of the run's cost and best step (split "train"), the validation
                             loss at the best step and the last (split "val": loss, loss_last)
    position_snapshots.pt    (optional) the positional parameters at evenly spaced steps
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pelab import io
from pelab.config import from_dict
from pelab.io import RUN_FILE, WEIGHTS, run_dir
from pelab.positional import scheme_options
from pelab.tasks import get_task

__all__ = ["RUN_FILE", "WEIGHTS", "LoadedRun", "load_run", "run_dir"]


@dataclass
class LoadedRun:
    task: str
    scheme: str
    seed: int
    meta: dict[str, Any]  # the whole run.json
    model: nn.Module  # in eval mode, on the CPU


def load_run(path: str | Path) -> LoadedRun:
    """Rebuild the model of a run from its ``run.json`` and load its weights (no params.yaml needed)."""
    path = Path(path)
    if not (path / RUN_FILE).exists():
        raise FileNotFoundError(f"no trained run at {path} (missing {RUN_FILE}); train it first")
    meta = io.read_json(path / RUN_FILE)
    task = get_task(meta["task"])
    model_cfg = from_dict(task.sections["model"], meta["model"], f"{path / RUN_FILE}: model")
    options = scheme_options(meta["scheme"], meta["options"], f"{path / RUN_FILE}: options")
    model = task.build_model(model_cfg, meta["scheme"], options, int(meta["seed"]), meta["info"])
    model.load_state_dict(torch.load(path / WEIGHTS, weights_only=True))
    return LoadedRun(meta["task"], meta["scheme"], int(meta["seed"]), meta, model.eval())

