"""The copy task's config sections: ``copy.data``, ``copy.model``, ``copy.train``, ``copy.eval``."""

from __future__ import annotations

from dataclasses import dataclass

from pelab.config import TrainConfig
from pelab.model.config import ModelConfig

__all__ = ["CopyDataConfig", "CopyEvalConfig", "ModelConfig", "TrainConfig"]


@dataclass(frozen=True)
class CopyDataConfig:
    """``d1 … dL <copy> pad…`` -> ``d1 … dL <copy> d1 … dL pad…`` in one encoder pass.

    One dataset (drawn with ``seed``) serves every scheme and every training seed, so runs pair by seed
    and by test example; the training seeds vary the initial weights and the batch order. Both splits are
    stratified by length (``data.generate.make_copy_dataset``).
    """

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
    seed: int = 0  # the data seed (not a training seed)
    holdout_share: float = 0.2  # of a short length's sequences held out when it cannot fill its test quota

    def __post_init__(self) -> None:
        if self.n_digits < 2:
            raise ValueError(f"copy.data.n_digits must be >= 2, got {self.n_digits}")
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"copy.data needs 1 <= min_len <= max_len, got min_len={self.min_len}, max_len={self.max_len}")
        if 2 * self.max_len + 1 > self.context:
            raise ValueError(
                f"copy.data.max_len={self.max_len} does not fit context={self.context}: a sequence of length L "
                f"needs 2L+1 positions; use max_len <= {(self.context - 1) // 2} or context >= {2 * self.max_len + 1}"
            )
        if not 1 <= self.long_min_len <= self.long_max_len:
            raise ValueError(
                f"copy.data needs 1 <= long_min_len <= long_max_len, got {self.long_min_len}, {self.long_max_len}"
            )
        if 2 * self.long_max_len + 1 > self.long_context:
            raise ValueError(
                f"copy.data.long_max_len={self.long_max_len} does not fit long_context={self.long_context}; use "
                f"long_max_len <= {(self.long_context - 1) // 2} or long_context >= {2 * self.long_max_len + 1}"
            )
        if not 0.0 < self.holdout_share < 1.0:
            raise ValueError(f"copy.data.holdout_share must be in (0, 1), got {self.holdout_share}")
        for name in ("n_train", "n_test", "n_test_long"):
            if getattr(self, name) < 1:
                raise ValueError(f"copy.data.{name} must be >= 1, got {getattr(self, name)}")

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
class CopyEvalConfig:
    batch_size: int = 512  # sequences per forward pass at evaluation

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"copy.eval.batch_size must be >= 1, got {self.batch_size}")
