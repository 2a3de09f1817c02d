"""Config sections of the length tasks: ``<task>.data``, ``<task>.model``, ``<task>.train``, ``<task>.eval``.

Every length task reads the same shared block (``length:`` in conf/config.yaml) unless it overrides it, so the
problems and both architectures are trained with the same model size, budget and schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from pelab.config import TrainConfig
from pelab.model.config import ModelConfig
from pelab.tasks.recalibration import RecalibrationSettings

__all__ = ["LengthDataConfig", "LengthEvalConfig", "LengthModelConfig", "TrainConfig"]


@dataclass(frozen=True)
class LengthDataConfig:
    """Training on input lengths 1..train_max, testing at every length 1..test_max.

    One dataset (drawn with ``seed``) serves every scheme and training seed. At each training length the test
    sequences are drawn first and never occur in training (a length with few distinct sequences holds
    ``holdout_share`` of them out); longer lengths are test only.
    """

    n_symbols: int = 2  # input alphabet 0..n_symbols-1 (binary addition always uses 2)
    train_max: int = 10  # N: training lengths 1..N
    test_max: int = 40  # M: evaluation at every length 1..M
    n_train: int = 10000  # training sequences, split evenly over the training lengths
    n_test: int = 64  # test sequences per length
    seed: int = 0  # the data seed (not a training seed)
    holdout_share: float = 0.2

    def __post_init__(self) -> None:
        if self.n_symbols < 2:
            raise ValueError(f"length data.n_symbols must be >= 2, got {self.n_symbols}")
        if not 1 <= self.train_max <= self.test_max:
            raise ValueError(f"length data needs 1 <= train_max <= test_max, got train_max={self.train_max}, "
                             f"test_max={self.test_max}")
        for name in ("n_train", "n_test"):
            if getattr(self, name) < 1:
                raise ValueError(f"length data.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 < self.holdout_share < 1.0:
            raise ValueError(f"length data.holdout_share must be in (0, 1), got {self.holdout_share}")


LengthModelConfig = ModelConfig  # the shared encoder config; the task decides bidirectional or causal


@dataclass(frozen=True)
class LengthEvalConfig(RecalibrationSettings):
    """How the length runs are scored; recalibration (``RecalibrationSettings``, ``tasks/length/recalibrate.py``):
    each run of a scheme in ``recalibrate`` fine-tuned on input lengths 1..``recalibrate_multiple``·N with each method
    that applies."""

    batch_size: int = 256  # sequences per forward pass at evaluation
    # randomized schemes: the test sequences of a length are split into this many groups, each placed at its
    # own draw of positions (the same draws for every run); deterministic schemes are unaffected
    position_draws: int = 8
    # effective length (RULER): the longest input length up to which token accuracy stays at or above this
    effective_threshold: float = 0.9

    def __post_init__(self) -> None:
        self.check_recalibration_settings("length.eval")
        if self.batch_size < 1:
            raise ValueError(f"length eval.batch_size must be >= 1, got {self.batch_size}")
        if self.position_draws < 1:
            raise ValueError(f"length eval.position_draws must be >= 1, got {self.position_draws}")
        if not 0.0 < self.effective_threshold <= 1.0:
            raise ValueError(f"length eval.effective_threshold must be in (0, 1], got {self.effective_threshold}")
