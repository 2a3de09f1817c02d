"""Typed configuration: ``params.yaml`` -> dataclasses -> constructors.

Configs hold strings and numbers only (they serialise beside every checkpoint), and each checks
itself in ``__post_init__`` with a message that says what to change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from pelab.positional import check_scheme


def _from_dict(cls, data: dict[str, Any] | None):
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys by name."""
    data = dict(data or {})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} key(s) {unknown}; valid keys: {sorted(known)}")
    return cls(**data)


@dataclass(frozen=True)
class PositionalConfig:
    """Hyperparameters of the schemes; each scheme reads the ones it uses."""

    max_positions: int = 128  # rows of the learned table
    base: float = 10000.0  # wavelength base of sinusoidal and RoPE
    num_buckets: int = 32  # T5 relative-position buckets
    max_distance: int = 128  # T5: distances beyond this share the last bucket

    def __post_init__(self) -> None:
        if self.max_positions < 1:
            raise ValueError(f"positional.max_positions must be >= 1, got {self.max_positions}")
        if self.num_buckets < 4 or self.num_buckets % 2:
            raise ValueError(f"positional.num_buckets must be an even number >= 4, got {self.num_buckets}")


@dataclass(frozen=True)
class ModelConfig:
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(
                f"model.d_model={self.d_model} is not divisible by model.n_heads={self.n_heads}; "
                "choose n_heads that divides d_model"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model.dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    log_every: int = 10
    checkpoints: int = 0  # number of evenly spaced snapshots of the position table to keep

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"train.lr must be > 0, got {self.lr}")


@dataclass(frozen=True)
class CopyTaskConfig:
    """The copy task: ``digits <copy> pad…`` -> ``digits <copy> digits pad…`` in one encoder pass."""

    n_digits: int = 10  # symbols 0..n_digits-1
    context: int = 20  # sequence length the model is trained on
    min_len: int = 1
    max_len: int = 9
    long_context: int = 40  # evaluation beyond the training length
    long_min_len: int = 10
    long_max_len: int = 19
    n_train: int = 10000
    n_test: int = 1000
    n_test_long: int = 1000

    def __post_init__(self) -> None:
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"copy.task needs 1 <= min_len <= max_len, got min_len={self.min_len}, max_len={self.max_len}")
        if 2 * self.max_len + 1 > self.context:
            raise ValueError(
                f"copy.task.max_len={self.max_len} does not fit context={self.context}: a sequence of length L "
                f"needs 2L+1 positions; use max_len <= {(self.context - 1) // 2} or context >= {2 * self.max_len + 1}"
            )
        if not 1 <= self.long_min_len <= self.long_max_len:
            raise ValueError(
                f"copy.task needs 1 <= long_min_len <= long_max_len, got {self.long_min_len}, {self.long_max_len}"
            )
        if 2 * self.long_max_len + 1 > self.long_context:
            raise ValueError(
                f"copy.task.long_max_len={self.long_max_len} does not fit long_context={self.long_context}; use "
                f"long_max_len <= {(self.long_context - 1) // 2} or long_context >= {2 * self.long_max_len + 1}"
            )

    @property
    def vocab_size(self) -> int:
        return self.n_digits + 2  # digits, <copy>, pad

    @property
    def copy_token(self) -> int:
        return self.n_digits

    @property
    def pad_token(self) -> int:
        return self.n_digits + 1


@dataclass(frozen=True)
class CopyStudyConfig:
    task: CopyTaskConfig = field(default_factory=CopyTaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CopyStudyConfig":
        data = dict(data or {})
        unknown = sorted(set(data) - {"task", "model", "train"})
        if unknown:
            raise ValueError(f"unknown copy key(s) {unknown}; valid keys: ['model', 'task', 'train']")
        return cls(
            task=_from_dict(CopyTaskConfig, data.get("task")),
            model=_from_dict(ModelConfig, data.get("model")),
            train=_from_dict(TrainConfig, data.get("train")),
        )


@dataclass(frozen=True)
class Params:
    """The parts of params.yaml every study shares."""

    profile: str
    schemes: tuple[str, ...]
    seeds: tuple[int, ...]
    positional: PositionalConfig
    raw: dict[str, Any]
    device: str = "auto"

    def __post_init__(self) -> None:
        if not self.schemes:
            raise ValueError("pe.schemes is empty; list at least one scheme")
        for name in self.schemes:
            check_scheme(name)
        if not self.seeds:
            raise ValueError("seeds is empty; list at least one seed, e.g. seeds: [0, 1, 2, 3, 4]")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct, got {list(self.seeds)}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"unknown device {self.device!r}; valid choices: auto, cpu, cuda")

    @property
    def copy(self) -> CopyStudyConfig:
        return CopyStudyConfig.from_dict(self.raw.get("copy", {}))


def load_params(path: str | Path = "params.yaml") -> Params:
    with open(path) as f:
        raw = yaml.safe_load(f) or {}
    return Params(
        profile=str(raw.get("profile", "custom")),
        schemes=tuple(raw.get("pe", {}).get("schemes", [])),
        seeds=tuple(int(s) for s in raw.get("seeds", [])),
        positional=_from_dict(PositionalConfig, raw.get("positional")),
        raw=raw,
        device=str(raw.get("device", "auto")),
    )


def to_dict(config: Any) -> dict[str, Any]:
    return asdict(config)
