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
        if self.n_layers < 1 or self.n_heads < 1 or self.d_model < 1 or self.d_ff < 1:
            raise ValueError(
                f"model sizes must be >= 1, got d_model={self.d_model}, n_layers={self.n_layers}, "
                f"n_heads={self.n_heads}, d_ff={self.d_ff}"
            )
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
class TranslationDataConfig:
    """Where the raw corpus comes from and how the prepare stage tokenizes and filters it."""

    search_dirs: tuple[str, ...] = ("data/raw/multi30k",)  # first dir holding the files wins; downloads go to the first
    download: bool = True  # fetch missing files (checksum-verified); tests and the smoke profile never do
    vocab_size: int = 8000  # joint fr+en BPE vocabulary, special tokens included
    min_frequency: int = 2  # a BPE merge needs at least this many occurrences
    max_tokens: int = 100  # train/val pairs with more subword tokens on either side are dropped
    train_sentences: int | None = None  # keep only the first N training pairs (None = all)
    test_sentences: int | None = None  # keep only the first N pairs of each evaluation split (None = all)

    def __post_init__(self) -> None:
        object.__setattr__(self, "search_dirs", tuple(str(d) for d in self.search_dirs))
        if not self.search_dirs:
            raise ValueError("translation.data.search_dirs is empty; list a directory, e.g. data/raw/multi30k")
        if self.vocab_size < 16:
            raise ValueError(f"translation.data.vocab_size must be >= 16, got {self.vocab_size}")
        if self.max_tokens < 1:
            raise ValueError(f"translation.data.max_tokens must be >= 1, got {self.max_tokens}")
        for name in ("train_sentences", "test_sentences"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"translation.data.{name} must be >= 1 or null (= all), got {value}")


@dataclass(frozen=True)
class Seq2SeqConfig:
    """Encoder-decoder size; both stacks share d_model, heads and FFN width."""

    d_model: int = 512
    encoder_layers: int = 3
    decoder_layers: int = 3
    n_heads: int = 8
    d_ff: int = 2048
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(
                f"translation.model.d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "choose n_heads that divides d_model"
            )
        if self.encoder_layers < 1 or self.decoder_layers < 1:
            raise ValueError(
                "translation.model needs >= 1 encoder and decoder layer, got "
                f"{self.encoder_layers}+{self.decoder_layers}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"translation.model.dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class TranslationTrainConfig(TrainConfig):
    """The shared optimisation settings plus what is specific to translation."""

    label_smoothing: float = 0.1
    val_sentences: int | None = None  # validation loss on the first N val pairs at every log step (None = all)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"translation.train.label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.val_sentences is not None and self.val_sentences < 1:
            raise ValueError(f"translation.train.val_sentences must be >= 1 or null (= all), got {self.val_sentences}")


@dataclass(frozen=True)
class DecodeConfig:
    """Greedy and beam search. A hypothesis may have at most ``max_len_a * source_tokens + max_len_b`` tokens."""

    beam_size: int = 5
    length_penalty: float = 1.0  # final beam score = log p / length**length_penalty
    max_len_a: float = 1.5
    max_len_b: int = 10
    batch_size: int = 128  # source sentences decoded together
    beam_sentences: int | None = None  # beam search on the first N sentences of each split only (None = all)

    def __post_init__(self) -> None:
        if self.beam_size < 1:
            raise ValueError(f"translation.decode.beam_size must be >= 1, got {self.beam_size}")
        if self.max_len_a < 0 or self.max_len_b < 1:
            raise ValueError(
                f"translation.decode needs max_len_a >= 0 and max_len_b >= 1, got {self.max_len_a}, {self.max_len_b}"
            )
        if self.batch_size < 1:
            raise ValueError(f"translation.decode.batch_size must be >= 1, got {self.batch_size}")
        if self.beam_sentences is not None and self.beam_sentences < 1:
            raise ValueError(
                f"translation.decode.beam_sentences must be >= 1 or null (= all), got {self.beam_sentences}"
            )


@dataclass(frozen=True)
class TranslationEvalConfig:
    length_buckets: tuple[int, ...] = (10, 15, 20)  # upper bounds (source words) of BLEU-by-length buckets
    examples: tuple[int, ...] = (0, 1, 2)  # indices into the first evaluation split shown in the report

    def __post_init__(self) -> None:
        object.__setattr__(self, "length_buckets", tuple(int(b) for b in self.length_buckets))
        object.__setattr__(self, "examples", tuple(int(i) for i in self.examples))
        if list(self.length_buckets) != sorted(set(self.length_buckets)) or any(b < 1 for b in self.length_buckets):
            raise ValueError(
                f"translation.eval.length_buckets must be increasing positive bounds, got {list(self.length_buckets)}"
            )
        if any(i < 0 for i in self.examples):
            raise ValueError(f"translation.eval.examples must be indices >= 0, got {list(self.examples)}")


@dataclass(frozen=True)
class TranslationStudyConfig:
    """French -> English translation: corpus, tokenizer and filters, model, training, decoding, evaluation."""

    corpus: str = "multi30k"
    data: TranslationDataConfig = field(default_factory=TranslationDataConfig)
    model: Seq2SeqConfig = field(default_factory=Seq2SeqConfig)
    train: TranslationTrainConfig = field(default_factory=TranslationTrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    eval: TranslationEvalConfig = field(default_factory=TranslationEvalConfig)

    def __post_init__(self) -> None:
        from pelab.tasks.corpora import check_corpus  # the registry of corpora lives beside their loaders

        check_corpus(self.corpus)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TranslationStudyConfig":
        data = dict(data or {})
        parts = {"data": TranslationDataConfig, "model": Seq2SeqConfig, "train": TranslationTrainConfig,
                 "decode": DecodeConfig, "eval": TranslationEvalConfig}
        unknown = sorted(set(data) - set(parts) - {"corpus"})
        if unknown:
            raise ValueError(f"unknown translation key(s) {unknown}; valid keys: {sorted([*parts, 'corpus'])}")
        built = {name: _from_dict(kind, data.get(name)) for name, kind in parts.items()}
        return cls(corpus=str(data.get("corpus", "multi30k")), **built)


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

    @property
    def translation(self) -> TranslationStudyConfig:
        return TranslationStudyConfig.from_dict(self.raw.get("translation", {}))


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
