"""The registry of parallel corpora, keyed by the string users put in ``translation.corpus``.

Each loader returns the raw sentence pairs per split, the evaluation splits in report order, and
the provenance of the data (file checksums or the Hub id), written beside the prepared data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pelab.tasks.translation.data import iwslt, multi30k

if TYPE_CHECKING:
    from pelab.tasks.translation.config import TranslationDataConfig


@dataclass(frozen=True)
class ParallelCorpus:
    splits: dict[str, dict[str, list[str]]]  # split -> {"fr": [...], "en": [...]}, line-aligned
    eval_splits: tuple[str, ...]  # the test splits, in report order (the first is the headline)
    provenance: dict[str, Any] = field(default_factory=dict)


# each corpus's test splits in report order (the first is the headline); translation.eval.splits picks among them
EVAL_SPLITS: dict[str, tuple[str, ...]] = {"multi30k": multi30k.EVAL_SPLITS, "iwslt2017": iwslt.EVAL_SPLITS}


def _multi30k(data: TranslationDataConfig) -> ParallelCorpus:
    splits, checksums = multi30k.load_multi30k(data.search_dirs, allow_download=data.download, download_dir=data.download_dir)
    return ParallelCorpus(splits, multi30k.EVAL_SPLITS, {"source": multi30k.BASE_URL, "sha256": checksums})


def _iwslt2017(data: TranslationDataConfig) -> ParallelCorpus:
    return ParallelCorpus(iwslt.load_iwslt2017(), iwslt.EVAL_SPLITS, {"source": f"{iwslt.HUB_ID}:{iwslt.HUB_CONFIG}"})


CORPORA: dict[str, Callable[[TranslationDataConfig], ParallelCorpus]] = {
    "multi30k": _multi30k,
    "iwslt2017": _iwslt2017,
}


def corpus_names() -> list[str]:
    return list(CORPORA)


def check_corpus(name: str) -> str:
    if name not in CORPORA:
        raise ValueError(f"unknown translation corpus {name!r}; valid choices: {', '.join(corpus_names())}")
    return name


def load_corpus(name: str, data: TranslationDataConfig) -> ParallelCorpus:
    return CORPORA[check_corpus(name)](data)
