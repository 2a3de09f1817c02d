"""The translation task's config sections: ``translation.data``, ``.model``, ``.train``, ``.eval``."""

from __future__ import annotations

from dataclasses import dataclass, field

from pelab.config import TrainConfig, from_dict


@dataclass(frozen=True)
class TranslationDataConfig:
    """Where the raw corpus comes from and how the prepare stage tokenizes and filters it."""

    corpus: str = "multi30k"  # a key of data.corpora.CORPORA, checked by TranslationTask.check
    search_dirs: tuple[str, ...] = ("corpora/multi30k", "data/raw/multi30k")  # the first dir holding a file wins
    download: bool = False  # fetch files missing from search_dirs (checksum-verified) into download_dir
    download_dir: str = "data/raw/multi30k"
    vocab_size: int = 8000  # joint fr+en BPE vocabulary, special tokens included
    min_frequency: int = 2  # a BPE merge needs at least this many occurrences
    max_tokens: int = 100  # train/val pairs with more subword tokens on either side are dropped
    train_sentences: int | None = None  # keep only the first N training pairs (None = all)
    test_sentences: int | None = None  # keep only the first N pairs of each evaluation split (None = all)
    # Translation beyond its lengths: train (and validate) only on pairs whose French source has at most this
    # many words; the test splits keep every length, so BLEU by source length shows the longer ones (None = all).
    train_max_source_words: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "search_dirs", tuple(str(d) for d in self.search_dirs))
        if not self.search_dirs:
            raise ValueError("translation.data.search_dirs is empty; list a directory, e.g. data/raw/multi30k")
        if self.vocab_size < 16:
            raise ValueError(f"translation.data.vocab_size must be >= 16, got {self.vocab_size}")
        if self.max_tokens < 1:
            raise ValueError(f"translation.data.max_tokens must be >= 1, got {self.max_tokens}")
        for name in ("train_sentences", "test_sentences", "train_max_source_words"):
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
        if min(self.d_model, self.n_heads, self.d_ff) < 1:
            raise ValueError(f"translation.model sizes must be >= 1, got d_model={self.d_model}, "
                             f"n_heads={self.n_heads}, d_ff={self.d_ff}")
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
            raise ValueError(f"translation.eval.decode.beam_size must be >= 1, got {self.beam_size}")
        if self.max_len_a < 0 or self.max_len_b < 1:
            raise ValueError(
                f"translation.eval.decode needs max_len_a >= 0 and max_len_b >= 1, got {self.max_len_a}, "
                f"{self.max_len_b}"
            )
        if self.batch_size < 1:
            raise ValueError(f"translation.eval.decode.batch_size must be >= 1, got {self.batch_size}")
        if self.beam_sentences is not None and self.beam_sentences < 1:
            raise ValueError(
                f"translation.eval.decode.beam_sentences must be >= 1 or null (= all), got {self.beam_sentences}"
            )


@dataclass(frozen=True)
class TranslationEvalConfig:
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    length_buckets: tuple[int, ...] = (10, 15, 20)  # upper bounds (source words) of BLEU-by-length buckets
    examples: tuple[int, ...] = (0, 1, 2)  # indices into the first evaluation split shown in the report
    # the corpus's test splits to decode and score, a subset in the corpus's order (None = all of them); the
    # first evaluated one is the headline. The quick profile scores test_2016_flickr only.
    splits: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.splits is not None:
            object.__setattr__(self, "splits", tuple(str(s) for s in self.splits))
            if not self.splits or len(set(self.splits)) != len(self.splits):
                raise ValueError(f"translation.eval.splits must list distinct split names or be null (= all), "
                                 f"got {list(self.splits)}")
        if not isinstance(self.decode, DecodeConfig):
            object.__setattr__(self, "decode", from_dict(DecodeConfig, self.decode, "translation.eval.decode"))
        object.__setattr__(self, "length_buckets", tuple(int(b) for b in self.length_buckets))
        object.__setattr__(self, "examples", tuple(int(i) for i in self.examples))
        if list(self.length_buckets) != sorted(set(self.length_buckets)) or any(b < 1 for b in self.length_buckets):
            raise ValueError(
                f"translation.eval.length_buckets must be increasing positive bounds, got {list(self.length_buckets)}"
            )
        if any(i < 0 for i in self.examples):
            raise ValueError(f"translation.eval.examples must be indices >= 0, got {list(self.examples)}")
