"""The reverse task behind the ``Task`` interface (data and model in one small module; its scoring in
``evaluate.py``, found by that name as every task's is)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from pelab import io
from pelab.config import TrainConfig
from pelab.tasks.base import Task
from pelab.tasks.copy.config import ModelConfig
from pelab.tasks.copy.model import build_copy_model


# the task's params section at its smallest (the tests' studies list it as ``tiny_reverse:``)
TINY = {"data": {"length": 3, "n_train": 32, "n_test": 8},
        "model": {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32},
        "train": {"steps": 6, "batch_size": 8, "lr": 0.003, "warmup_steps": 1, "log_every": 3},
        "eval": {}}


@dataclass(frozen=True)
class ReverseData:
    length: int = 4
    n_train: int = 64
    n_test: int = 16


@dataclass(frozen=True)
class ReverseEval:
    pass


def reverse_split(n: int, length: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    digits = torch.randint(0, 10, (n, length), generator=generator)
    sep = torch.full((n, 1), 10)
    inputs = torch.cat([digits, sep, torch.full((n, length), 11)], dim=1)  # (N, 2L+1)
    targets = torch.cat([digits, sep, digits.flip(1)], dim=1)
    return {"inputs": inputs, "targets": targets}


class ReverseTask(Task):
    name = "tiny_reverse"

    def plots(self):  # its training loss in `dvc plots show` (Task.plots; aggregate writes the CSV)
        return {"train_loss": ("loss", "tiny reverse — training loss", "cross-entropy")}

    sections = {"data": ReverseData, "model": ModelConfig, "train": TrainConfig, "eval": ReverseEval}
    headline = {"test": ["exact_match"]}
    key_metrics = {"exact": (("test",), "exact_match")}

    def prepare(self, cfg, out_dir: Path) -> None:
        g = torch.Generator().manual_seed(0)
        with io.atomic_dir(out_dir) as tmp:
            torch.save({"train": reverse_split(cfg.data.n_train, cfg.data.length, g),
                        "test": reverse_split(cfg.data.n_test, cfg.data.length, g)}, tmp / "data.pt")

    def load_data(self, data_dir: Path):
        return torch.load(Path(data_dir) / "data.pt", weights_only=True)

    def data_info(self, data):
        return {"vocab_size": 12, "max_length": data["train"]["inputs"].shape[1]}


    def max_length(self, cfg) -> int:
        return 2 * cfg.data.length + 1

    def build_model(self, model_cfg, scheme, options, seed, info):
        return build_copy_model(scheme, info["vocab_size"], model_cfg, options, seed)

    def batches(self, cfg, data, seed):
        train, g = data["train"], torch.Generator().manual_seed(seed)

        def next_batch(step: int):
            idx = torch.randint(0, train["inputs"].shape[0], (cfg.train.batch_size,), generator=g)
            return train["inputs"][idx], train["targets"][idx]

        return next_batch

    def loss(self, cfg):
        def loss_fn(model, batch):
            logits, _ = model(batch[0])
            return F.cross_entropy(logits.flatten(0, 1), batch[1].flatten()), batch[1].numel()

        return loss_fn

