"""The configuration every task shares (the ``train`` section, the device) and the dict <-> dataclass helpers.

Configs hold strings and numbers only (they serialise beside every checkpoint), and each checks itself in
``__post_init__``. The sections of one task live in its own folder (``pelab/tasks/<name>/config.py``);
``pelab.params`` validates a whole ``params.yaml`` into them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

DEVICES = ("auto", "cpu", "cuda")


def from_dict(cls, data: dict[str, Any] | None, where: str):
    """Build dataclass ``cls`` from a mapping; an unknown key is an error naming ``where`` and the valid keys."""
    data = dict(data or {})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in {where}; valid keys: {', '.join(sorted(known))}")
    return cls(**data)


def to_dict(config: Any) -> dict[str, Any]:
    return asdict(config)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings every task shares (AdamW, warmup + cosine, clipping, logging)."""

    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    log_every: int = 10
    checkpoints: int = 0  # number of evenly spaced snapshots of the position tables to keep

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"train.lr must be > 0, got {self.lr}")
        if self.warmup_steps < 0 or self.checkpoints < 0:
            raise ValueError(f"train.warmup_steps and train.checkpoints must be >= 0, got "
                             f"{self.warmup_steps}, {self.checkpoints}")


def check_device(device: str) -> str:
    """``auto`` | ``cpu`` | ``cuda`` | ``cuda:N``; asking for CUDA on a machine without it is an error."""
    kind, _, index = device.partition(":")
    if kind not in DEVICES or (index and (kind != "cuda" or not index.isdigit())):
        raise ValueError(f"unknown device {device!r}; valid choices: auto, cpu, cuda, cuda:N")
    if kind == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but no CUDA device is available; use auto or cpu")
        if index and int(index) >= torch.cuda.device_count():
            raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return device
