"""The copy task (../references copy-task post) behind the ``Task`` interface: what training executes.

Evaluation lives in ``evaluate.py`` so that editing a metric never retrains a model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from pelab.device import autocast
from pelab.tasks.base import Batch, Task, TaskConfig, loss_logits
from pelab.tasks.copy import data as copy_data
from pelab.tasks.copy.config import CopyDataConfig, CopyEvalConfig, ModelConfig, TrainConfig
from pelab.tasks.copy.data import CopyData, CopySplit
from pelab.tasks.copy.model import CopyTransformer, build_copy_model

VAL_SHARE = 0.05  # of each length's training sequences: the validation split (weights kept, rates chosen on it)


def copy_loss(model: CopyTransformer, batch: Batch) -> tuple[torch.Tensor, int]:
    inputs, targets = batch
    logits, _ = model(inputs)  # (B, T, V)
    return F.cross_entropy(loss_logits(logits.flatten(0, 1)), targets.flatten()), targets.numel()


@torch.no_grad()
def held_out_loss(model: CopyTransformer, split: CopySplit, device: torch.device, batch_size: int = 1024) -> float:
    """Mean per-token cross-entropy on a held-out split: the validation curve, on which each run's weights
    (``training.loop.BestWeights``) and each scheme's tuned rate are chosen."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(split), batch_size):
        rows = slice(start, start + batch_size)
        batch = (split.inputs[rows].to(device), split.targets[rows].to(device))
        with autocast(device):
            loss, n_tokens = copy_loss(model, batch)
        total += float(loss) * n_tokens
        count += n_tokens
    return total / count


def split_validation(data: CopyData) -> CopyData:
    """The last ``VAL_SHARE`` of each length's training sequences (none of a length with fewer than 20) as the
    split ``val``, the rest as ``train``; the test splits as they are. Every run trains and selects on this."""
    train = data["train"]
    held = torch.zeros(len(train), dtype=torch.bool)
    for length in train.lengths.unique().tolist():
        rows = (train.lengths == length).nonzero().flatten()  # (n_length,)
        held[rows[len(rows) - int(len(rows) * VAL_SHARE):]] = True
    if not held.any():
        raise ValueError(f"copy: too few training sequences ({len(train)}) to hold out a validation split; "
                         "raise copy.data.n_train")

    def part(mask: torch.Tensor) -> CopySplit:
        return CopySplit(train.inputs[mask], train.targets[mask], train.lengths[mask])

    return CopyData({**data.splits, "train": part(~held), "val": part(held)}, data.meta)


class CopyTask(Task):
    name = "copy"
    sections = {"data": CopyDataConfig, "model": ModelConfig, "train": TrainConfig, "eval": CopyEvalConfig}
    headline = {"test": ["exact_match", "token_accuracy"], "test_long": ["exact_match", "token_accuracy"]}
    key_metrics = {"exact": (("test",), "exact_match"), "exact_long": (("test_long",), "exact_match"),
                   "token_long": (("test_long",), "token_accuracy")}
    ranked_by = ("token_long", True)

    def prepare(self, cfg: TaskConfig, out_dir: Path) -> None:
        copy_data.prepare(cfg.data, out_dir)

    def plots(self) -> dict[str, tuple[str, str, str]]:
        return {"train_loss": ("loss", "Copy task — training loss (mean over seeds)", "cross-entropy"),
                "val_loss": ("val_loss", "Copy task — validation loss (held-out training sequences, mean over seeds)",
                             "cross-entropy per token")}

    tunes_on_validation_split = True  # held out from the training sequences, and from every test set

    def load_data(self, data_dir: Path) -> CopyData:
        return split_validation(copy_data.load(data_dir))

    def data_info(self, data: CopyData) -> dict[str, Any]:
        cfg = data.config
        return {"vocab_size": cfg.vocab_size, "max_length": max(cfg.context, cfg.long_context)}


    def max_length(self, cfg: TaskConfig) -> int:
        return max(cfg.data.context, cfg.data.long_context)

    def build_model(self, model_cfg: ModelConfig, scheme: str, options: Any, seed: int,
                    info: dict[str, Any]) -> CopyTransformer:
        return build_copy_model(scheme, int(info["vocab_size"]), model_cfg, options, seed)

    def batches(self, cfg: TaskConfig, data: CopyData, seed: int) -> Callable[[int], Batch]:
        """Length-balanced batches: each example picks a length uniformly, then one of its training sequences
        (short lengths have few distinct sequences, which therefore recur more often)."""
        train, order = data["train"], torch.Generator().manual_seed(seed)
        by_length = train.lengths.argsort(stable=True)  # (N,) indices grouped by length
        _, sizes = train.lengths.unique(sorted=True, return_counts=True)  # (K,)
        starts = sizes.cumsum(0) - sizes  # (K,)
        batch_size = cfg.train.batch_size

        def next_batch(step: int) -> Batch:
            which = torch.randint(0, len(sizes), (batch_size,), generator=order)  # (B,) a length each
            within = (torch.rand(batch_size, generator=order) * sizes[which]).long()  # (B,)
            idx = by_length[starts[which] + within]
            return train.inputs[idx], train.targets[idx]

        return next_batch

    def loss(self, cfg: TaskConfig):
        return copy_loss

    def validation(self, cfg: TaskConfig, data: CopyData, device: torch.device):
        val = data["val"]
        return lambda model: {"val_loss": held_out_loss(model, val, device)}


# the registry finds a task package by its TASKS (pelab.tasks)
TASKS = {"copy": CopyTask}
