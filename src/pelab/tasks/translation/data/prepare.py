"""Prepared translation data: a joint fr+en BPE tokenizer and token-id splits saved as Arrow.

Layout of a prepared directory (one DVC output shared by every scheme and seed)::

    tokenizer.json   HF ``tokenizers`` BPE, Metaspace pre-tokenizer (SentencePiece-style "▁" word marks)
    splits/          HF ``datasets`` DatasetDict: columns fr, en, src_ids, tgt_ids
    meta.json        corpus, evaluation splits, sizes before and after filtering, special ids, provenance

``src_ids`` is the French sentence followed by ``</s>``; ``tgt_ids`` is the bare English sentence
(the model reads ``<s> y`` and predicts ``y </s>``). Training and validation pairs longer than
``max_tokens`` on either side are dropped, and with ``train_max_source_words`` those whose source has more words
(translation beyond its lengths; the tokenizer never sees them); evaluation splits are never filtered.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from pelab import io
from pelab.tasks.translation.data.corpora import load_corpus

if TYPE_CHECKING:
    from pelab.tasks.translation.config import TranslationDataConfig

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIAL_TOKENS = (PAD, UNK, BOS, EOS)  # ids 0, 1, 2, 3
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)
SRC, TGT = "fr", "en"


def train_tokenizer(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> Tokenizer:
    """A joint BPE (Sennrich et al. 2016, https://arxiv.org/abs/1508.07909) over both languages.

    NFC normalisation; words are marked with a leading "▁" so decoding restores the exact spacing.
    """
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS), show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer)
    for token_id, token in enumerate(SPECIAL_TOKENS):
        assert tokenizer.token_to_id(token) == token_id, f"special token {token} must have id {token_id}"
    return tokenizer


def encode(tokenizer: Tokenizer, sentences: Sequence[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch(list(sentences), add_special_tokens=False)]


def decode(tokenizer: Tokenizer, sequences: Sequence[Sequence[int]]) -> list[str]:
    """Token ids -> detokenized text; specials (and anything after ``</s>``) are dropped."""
    cut = [list(seq[: list(seq).index(EOS_ID)]) if EOS_ID in seq else list(seq) for seq in sequences]
    return tokenizer.decode_batch(cut, skip_special_tokens=True)


def _split_rows(
    tokenizer: Tokenizer, pairs: dict[str, list[str]], max_tokens: int | None, limit: int | None,
    max_source_words: int | None = None,
) -> tuple[dict[str, list[Any]], int]:
    """Encode one split; drop pairs outside 1..max_tokens (if given) and pairs whose source has more than
    ``max_source_words`` words (if given); keep the first ``limit`` pairs."""
    fr, en = pairs[SRC], pairs[TGT]
    if limit is not None:
        fr, en = fr[:limit], en[:limit]
    src, tgt = encode(tokenizer, fr), encode(tokenizer, en)
    keep = range(len(fr))
    if max_tokens is not None:
        keep = [i for i in keep if 1 <= len(src[i]) <= max_tokens and 1 <= len(tgt[i]) <= max_tokens]
    if max_source_words is not None:
        keep = [i for i in keep if len(fr[i].split()) <= max_source_words]
    rows = {
        SRC: [fr[i] for i in keep],
        TGT: [en[i] for i in keep],
        "src_ids": [src[i] + [EOS_ID] for i in keep],
        "tgt_ids": [tgt[i] for i in keep],
    }
    return rows, len(fr)


def prepare_translation_data(
    splits: dict[str, dict[str, list[str]]],
    eval_splits: Sequence[str],
    out_dir: Path,
    *,
    vocab_size: int,
    min_frequency: int,
    max_tokens: int,
    train_sentences: int | None = None,
    test_sentences: int | None = None,
    train_max_source_words: int | None = None,
    provenance: dict[str, Any] | None = None,
    described: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train the tokenizer on the (kept) training text and write tokenizer, splits and meta into ``out_dir``;
    ``described`` (what the data was prepared from) is added to the meta."""
    import datasets

    datasets.disable_progress_bars()
    for name in ("train", "val", *eval_splits):
        if name not in splits:
            raise ValueError(f"corpus has no {name!r} split; it has {sorted(splits)}")
    train = splits["train"]
    if train_max_source_words is not None:  # before the tokenizer: the longer pairs are not seen at all
        kept = [i for i, text in enumerate(train[SRC]) if len(text.split()) <= train_max_source_words]
        train = {side: [train[side][i] for i in kept] for side in (SRC, TGT)}
        splits = {**splits, "train": train}
    n_train = len(train[SRC]) if train_sentences is None else min(train_sentences, len(train[SRC]))
    tokenizer = train_tokenizer((*train[SRC][:n_train], *train[TGT][:n_train]), vocab_size, min_frequency)
    columns, sizes = {}, {}
    for name in ("train", "val", *eval_splits):
        is_eval = name in eval_splits
        limit = n_train if name == "train" else (test_sentences if is_eval else None)
        rows, raw = _split_rows(tokenizer, splits[name], None if is_eval else max_tokens, limit,
                                None if is_eval else train_max_source_words)
        columns[name] = rows
        sizes[name] = {"raw": raw, "kept": len(rows[SRC])}
        if not rows[SRC]:
            raise ValueError(f"split {name!r} is empty after filtering (max_tokens={max_tokens}); raise max_tokens")
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    prepared = datasets.DatasetDict({name: datasets.Dataset.from_dict(rows) for name, rows in columns.items()})
    prepared.save_to_disk(str(out_dir / "splits"))
    meta = {
        "eval_splits": list(eval_splits),
        "sizes": sizes,
        "vocab_size": tokenizer.get_vocab_size(),
        "special_ids": dict(zip(SPECIAL_TOKENS, range(len(SPECIAL_TOKENS)))),
        "max_tokens": max_tokens,
        "train_max_source_words": train_max_source_words,
        "provenance": provenance or {},
        **(described or {}),
    }
    io.write_json(out_dir / "meta.json", meta)
    return meta


def prepare(cfg: TranslationDataConfig, out_dir: str | Path) -> None:
    """The prepare stage: load the corpus (checksum-verified), train the tokenizer, write the splits."""
    corpus = load_corpus(cfg.corpus, cfg)
    with io.atomic_dir(out_dir) as tmp:
        prepare_translation_data(
            corpus.splits, corpus.eval_splits, tmp,
            vocab_size=cfg.vocab_size, min_frequency=cfg.min_frequency, max_tokens=cfg.max_tokens,
            train_sentences=cfg.train_sentences, test_sentences=cfg.test_sentences,
            train_max_source_words=cfg.train_max_source_words, provenance=corpus.provenance,
            described={"corpus": cfg.corpus, "data": asdict(cfg)},
        )


@dataclass
class PreparedTranslation:
    tokenizer: Tokenizer
    splits: Any  # split -> pyarrow.Table (``read_splits``)
    meta: dict[str, Any]
    _columns: dict[tuple[str, str], list] = field(default_factory=dict, repr=False)

    @property
    def vocab_size(self) -> int:
        return int(self.meta["vocab_size"])

    @property
    def eval_splits(self) -> list[str]:
        return list(self.meta["eval_splits"])

    def column(self, split: str, name: str) -> list:
        """One column as a Python list, read from Arrow once (indexing a lazy Column row by row is slow)."""
        key = (split, name)
        if key not in self._columns:
            values = self.splits[split][name]  # an Arrow column (or, from a test, any sequence)
            self._columns[key] = values.to_pylist() if hasattr(values, "to_pylist") else list(values)
        return self._columns[key]

    def ids(self, split: str, column: str) -> list[list[int]]:
        return self.column(split, column)

    def text(self, split: str, lang: str) -> list[str]:
        return self.column(split, lang)


def load_prepared(data_dir: str | Path) -> PreparedTranslation:
    data_dir = Path(data_dir)
    return PreparedTranslation(
        tokenizer=Tokenizer.from_file(str(data_dir / "tokenizer.json")),
        splits=read_splits(data_dir / "splits"),
        meta=io.read_json(data_dir / "meta.json"),
    )


def read_splits(splits_dir: Path) -> dict[str, Any]:
    """The DatasetDict that ``datasets.save_to_disk`` wrote, read with pyarrow alone (split -> Arrow table,
    indexable by column name), so that training and evaluation do not need HF ``datasets`` (a GPU image may
    lack it). Its layout: ``dataset_dict.json`` lists the splits; each split's ``state.json`` lists its Arrow
    files, in the IPC stream format."""
    import pyarrow as pa

    out = {}
    for name in io.read_json(splits_dir / "dataset_dict.json")["splits"]:
        files = [f["filename"] for f in io.read_json(splits_dir / name / "state.json")["_data_files"]]
        tables = []
        for file in files:
            with pa.memory_map(str(splits_dir / name / file)) as source:
                tables.append(pa.ipc.open_stream(source).read_all())
        out[name] = pa.concat_tables(tables)
    return out


def pad_sequences(sequences: Sequence[Sequence[int]], pad: int = PAD_ID) -> torch.Tensor:
    """Right-pad integer sequences into a (B, T) int64 tensor, T = the longest."""
    width = max(len(s) for s in sequences)
    out = torch.full((len(sequences), width), pad, dtype=torch.long)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return out


def teacher_forcing_batch(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]):
    """(src (B, S), decoder input ``<s> y`` (B, T), decoder target ``y </s>`` (B, T)), all right-padded."""
    return (
        pad_sequences(src),
        pad_sequences([[BOS_ID, *t] for t in tgt]),
        pad_sequences([[*t, EOS_ID] for t in tgt]),
    )
