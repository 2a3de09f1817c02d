"""Multi30k task 1, French -> English (Elliott et al. 2016, 2017; https://github.com/multi30k/dataset).

The raw files are gzip, one sentence per line, line-aligned across languages. Each file is looked for in
the given directories in order; if none holds it (and downloading is allowed) it is fetched from the
canonical repository into the first directory. Every file used — found or downloaded — is checked
against the SHA-256 below, so a run can only ever see these exact bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

BASE_URL = "https://github.com/multi30k/dataset/raw/master/data/task1/raw"

# split name -> number of lines (README of the Multi30k repository)
SPLITS = {"train": 29000, "val": 1014, "test_2016_flickr": 1000, "test_2017_flickr": 1000}
EVAL_SPLITS = ("test_2016_flickr", "test_2017_flickr")
LANGUAGES = ("fr", "en")

# SHA-256 of the fr and en files of task 1 (the repository's raw/ folder).
SHA256 = {
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "test_2017_flickr.en.gz": "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
    "test_2017_flickr.fr.gz": "3ba671ceb2299f3304ffafefea7a833d08632fbaf0ba18546f8a2ec2391af496",
    "test_2017_mscoco.en.gz": "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58",
    "test_2017_mscoco.fr.gz": "754f3072ba9f124569ba5258b32730fc1d214bbf8e0c6dfb2b74401676220db0",
    "test_2018_flickr.en.gz": "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d",
    "test_2018_flickr.fr.gz": "fb2b83fcceb937a4f7e3e93c1c51c22aba92f1e342391e6b5ba392b16a920501",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
}


class ChecksumError(ValueError):
    """A raw file's bytes are not the published ones."""


def file_name(split: str, lang: str) -> str:
    return f"{split}.{lang}.gz"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, name: str | None = None) -> str:
    """SHA-256 of ``path`` (published as ``name``, default its file name); ChecksumError if it differs."""
    name = name or path.name
    expected = SHA256[name]
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumError(
            f"checksum mismatch for {name} ({path}): SHA-256 {actual}, expected {expected}; the file is corrupt "
            "or not the Multi30k original — delete it so that it is fetched again"
        )
    return actual


def download(name: str, dest_dir: Path, timeout: float = 60.0) -> Path:
    """Fetch ``BASE_URL/name`` into ``dest_dir``; the file appears there only once its checksum matched."""
    url = f"{BASE_URL}/{name}"
    with urllib.request.urlopen(url, timeout=timeout) as response:
        payload = response.read()
    dest_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=dest_dir)
    with os.fdopen(fd, "wb") as f:
        f.write(payload)
    try:
        verify(Path(tmp), name)
    except ChecksumError as err:
        os.unlink(tmp)
        raise ChecksumError(f"downloaded from {url}: {err}") from None
    final = dest_dir / name
    os.replace(tmp, final)
    return final


def locate(name: str, search_dirs: Sequence[str | Path], allow_download: bool,
           download_dir: str | Path | None = None) -> Path:
    """The verified file ``name``: the first copy in ``search_dirs``, else downloaded into ``download_dir``
    (default: the first of ``search_dirs``)."""
    dirs = [Path(d) for d in search_dirs]
    for directory in dirs:
        candidate = directory / name
        if candidate.is_file():
            verify(candidate)
            return candidate
    searched = ", ".join(str(d) for d in dirs)
    if not allow_download:
        raise FileNotFoundError(
            f"Multi30k file {name} not found in {searched} and downloading is off "
            "(translation.data.download: false); copy the raw files into one of these directories or set "
            "translation.data.download: true"
        )
    try:
        return download(name, Path(download_dir) if download_dir is not None else dirs[0])
    except (urllib.error.URLError, OSError) as err:
        raise FileNotFoundError(
            f"Multi30k file {name} not found in {searched}, and downloading {BASE_URL}/{name} failed ({err}); "
            "copy the raw files into one of these directories or connect to the network"
        ) from None


def read_lines(path: Path) -> list[str]:
    """The sentences of one gzip file, without line endings."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").rstrip("\r") for line in f]


def load_multi30k(
    search_dirs: Sequence[str | Path], *, allow_download: bool = True, splits: Sequence[str] = tuple(SPLITS),
    download_dir: str | Path | None = None,
) -> tuple[dict[str, dict[str, list[str]]], dict[str, str]]:
    """Read the fr/en sentences of ``splits``.

    Returns ({split: {"fr": [...], "en": [...]}}, {file name: sha256}) — the second is the provenance
    written beside the prepared data.
    """
    data: dict[str, dict[str, list[str]]] = {}
    checksums: dict[str, str] = {}
    for split in splits:
        if split not in SPLITS:
            raise ValueError(f"unknown Multi30k split {split!r}; valid choices: {', '.join(SPLITS)}")
        columns = {}
        for lang in LANGUAGES:
            path = locate(file_name(split, lang), search_dirs, allow_download, download_dir)
            checksums[path.name] = SHA256[path.name]
            columns[lang] = read_lines(path)
        if len(columns["fr"]) != len(columns["en"]):
            raise ValueError(
                f"Multi30k {split}: {len(columns['fr'])} French lines but {len(columns['en'])} English lines"
            )
        data[split] = columns
    return data, checksums
