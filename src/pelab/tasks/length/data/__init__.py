"""Prepare and load the data of a length task: per length, the source strings of each split.

``prepare`` writes ``sources.pt`` ({"train" | "test": {n: (count, source_length(n)) int64}}, and for recall
``"spread"``: {n: rows of N pairs spread over length n's context} beyond N) and ``meta.json``.
The question/answer layout (encoder or decoder) is made from the sources when batches are built
(``layout.py``), so the same file serves both architectures.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from pelab import io
from pelab.config import from_dict, to_dict
from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems import PROBLEMS, Problem

SOURCES = "sources.pt"


@dataclass
class LengthData:
    config: LengthDataConfig
    problem: Problem
    splits: dict[str, dict[int, torch.Tensor]]  # split -> length -> sources (count, source_length)

    @property
    def vocab_size(self) -> int:
        return self.problem.vocab_size(self.config)

    @property
    def symbols(self) -> int:
        """Tokens below the special ones (``problems.special_tokens``)."""
        return self.problem.symbols(self.config)


def distinct_codes(capacity: int, count: int, generator: torch.Generator, exclude: set[int] = frozenset()):
    """``count`` distinct integers in [0, capacity) not in ``exclude``, in random order."""
    if count > capacity - len(exclude):
        raise ValueError(f"cannot draw {count} distinct sequences: only {capacity - len(exclude)} are left")
    if capacity <= 200_000:
        pool = [c for c in torch.randperm(capacity, generator=generator).tolist() if c not in exclude]
        return pool[:count]
    rng = random.Random(int(torch.randint(0, 2**62, (1,), generator=generator)))  # exact for any capacity
    seen, out = set(exclude), []
    while len(out) < count:  # capacity is huge next to count: rejection terminates fast
        code = rng.randrange(capacity)
        if code not in seen:
            seen.add(code)
            out.append(code)
    return out


def decode_codes(codes: list[int], length: int, base: int) -> torch.Tensor:
    """Integers -> (len(codes), length) digit rows in ``base`` (most significant digit first)."""
    rows = [[(code // base**i) % base for i in reversed(range(length))] for code in codes]
    return torch.tensor(rows, dtype=torch.long).reshape(len(codes), length)


def make_splits(cfg: LengthDataConfig, problem: Problem) -> dict[str, dict[int, torch.Tensor]]:
    """Per length: test sequences first (distinct), then training sequences (distinct, none of them a test
    one) for lengths 1..train_max; test only beyond."""
    generator = torch.Generator().manual_seed(cfg.seed)
    if problem.draws_sources:
        return drawn_splits(cfg, problem, generator)
    base = problem.alphabet(cfg.n_symbols)
    per_length = math.ceil(cfg.n_train / cfg.train_max)
    train, test = {}, {}
    for n in range(1, cfg.test_max + 1):
        width = problem.source_length(n)
        capacity = base**width
        if n <= cfg.train_max:
            n_test = min(cfg.n_test, max(1, math.floor(cfg.holdout_share * capacity)))
            n_train = min(per_length, capacity - n_test)
            codes = distinct_codes(capacity, n_test + n_train, generator)
            test[n] = decode_codes(codes[:n_test], width, base)
            train[n] = decode_codes(codes[n_test:], width, base)
        else:
            test[n] = decode_codes(distinct_codes(capacity, min(cfg.n_test, capacity), generator), width, base)
    return {"train": train, "test": test}


def drawn_splits(cfg: LengthDataConfig, problem: Problem,
                 generator: torch.Generator) -> dict[str, dict[int, torch.Tensor]]:
    """``make_splits`` for problems that draw their own sources (``Problem.draw``), with the problem's own extra
    test splits after them (``Problem.extra_splits``: recall's ``spread``)."""
    per_length = math.ceil(cfg.n_train / cfg.train_max)
    train, test = {}, {}
    for n in range(1, cfg.test_max + 1):
        capacity = problem.capacity(cfg, n)
        n_test = min(cfg.n_test, max(1, math.floor(cfg.holdout_share * capacity)) if n <= cfg.train_max else capacity)
        test[n] = problem.draw(cfg, n, n_test, generator)
        if n <= cfg.train_max:
            n_train = min(per_length, capacity - n_test)
            train[n] = problem.draw(cfg, n, n_train, generator, exclude={tuple(r) for r in test[n].tolist()})
    return {"train": train, "test": test, **problem.extra_splits(cfg, generator)}


def prepare(problem_name: str, cfg: LengthDataConfig, out_dir: Path) -> None:
    problem = PROBLEMS[problem_name]
    splits = make_splits(cfg, problem)
    with io.atomic_dir(out_dir) as tmp:
        torch.save(splits, tmp / SOURCES)
        io.write_json(tmp / "meta.json", {
            "problem": problem_name, "config": to_dict(cfg),
            "counts": {split: {str(n): len(rows) for n, rows in by_length.items()} for split, by_length in splits.items()},
        })


def load(data_dir: Path) -> LengthData:
    meta = io.read_json(Path(data_dir) / "meta.json")
    splits = torch.load(Path(data_dir) / SOURCES, weights_only=True)
    return LengthData(from_dict(LengthDataConfig, meta["config"], "data"), PROBLEMS[meta["problem"]], splits)
