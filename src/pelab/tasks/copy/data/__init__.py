"""Copy-task data: one dataset (train, held-out test, longer test) shared by every scheme and seed.

``data/copy/`` holds ``dataset.pt`` (the three splits as tensors) and ``meta.json`` (the config it was
drawn with and the number of sequences per split and length).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pelab import io
from pelab.config import to_dict
from pelab.tasks.copy.config import CopyDataConfig
from pelab.tasks.copy.data.generate import (
    CopySplit,
    distinct_sequences,
    encode_examples,
    load_copy_dataset,
    make_copy_dataset,
    save_copy_dataset,
    stratified_counts,
)

__all__ = ["CopyData", "CopySplit", "distinct_sequences", "encode_examples", "load", "make_copy_dataset", "prepare",
           "sequences_per_length", "stratified_counts"]


@dataclass(frozen=True)
class CopyData:
    splits: dict[str, CopySplit]  # "train", "test", "test_long"
    meta: dict[str, Any]

    def __getitem__(self, name: str) -> CopySplit:
        return self.splits[name]

    @property
    def config(self) -> CopyDataConfig:
        return CopyDataConfig(**self.meta["data"])


def sequences_per_length(split: CopySplit) -> dict[int, int]:
    lengths, counts = split.lengths.unique(return_counts=True)
    return dict(zip(lengths.tolist(), counts.tolist()))


def prepare(cfg: CopyDataConfig, out_dir: str | Path) -> None:
    splits = make_copy_dataset(cfg)
    with io.atomic_dir(out_dir) as tmp:
        save_copy_dataset(splits, tmp / "dataset.pt")
        counts = {name: sequences_per_length(split) for name, split in splits.items()}
        io.write_json(tmp / "meta.json", {"data": to_dict(cfg), "sequences_per_length": counts})


def load(data_dir: str | Path) -> CopyData:
    path = Path(data_dir) / "dataset.pt"
    if not path.exists():
        raise FileNotFoundError(f"no prepared copy data at {path}; run `dvc repro prepare@copy`")
    return CopyData(load_copy_dataset(path), io.read_json(Path(data_dir) / "meta.json"))
