"""Recalibration in the length study (issue 56): a trained run fine-tuned briefly on input lengths 1..M·N with a
context-extension method in place, then scored again at every length 1..test_max with that method, as the extension
papers judge their methods (the LM's: ``tasks/lm/recalibrate.py``; the methods: ``positional.recalibration``).

A run's trained length is its longest training row, ``row_length(N)`` tokens; every method is fixed at s = M for it.
The fine-tune reads lengths 1..M·N drawn uniformly, as training reads 1..N: at the trained lengths the run's own
training sequences, at N+1..M·N sequences drawn for the fine-tune (``with_longer_lengths``: the data seed's, none of
them a test sequence of its length, a fifth of each length held out for validation as training holds out its own).
So at the lengths M·N+1..test_max every method is read beyond what its fine-tune saw, as the LM's at 4L after a
fine-tune at 2L. PoSE (Zhu et al., ICLR 2024, https://arxiv.org/abs/2309.10400, §3.2) reads the training lengths 1..N
only, each row whole at skip-wise positions that cover 0..M·row_length(N) − 1 (``pose_positions``), with PI at s = M.

Every method of a run fine-tunes from the run's kept weights with the same budget (``finetune_train``: a share of the
run's steps at a share of its rate, warmup and cosine, fresh AdamW moments), the same rows in the same order (the
task's stream, seeded by the run's seed and ``SEED_OFFSET``) and keeps its step of lowest validation loss on lengths
1..M·N with its method in place.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from functools import cache

import torch
import torch.nn.functional as F

from pelab.positional.recalibration import Method, finetune_train
from pelab.tasks.base import Batch, TaskConfig, loss_logits
from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data import LengthData, decode_codes, distinct_codes
from pelab.tasks.length.data.layout import IGNORE
from pelab.tasks.length.data.problems import PROBLEMS
from pelab.tasks.length.task import VAL_PER_LENGTH

SEED_OFFSET = 7_000_003  # the fine-tune's sequence picks: seed + this, the same for every method of a run
DATA_OFFSET = 3_000_017  # the sequences drawn at N+1..M·N: the data seed + this, the same for every run
POSE_GROUPS = 4  # PoSE draws its chunk split and skip this many times a batch (rows of a group share positions)


def finetune_config(cfg: TaskConfig, method: Method | None = None) -> TaskConfig:
    """The task config a fine-tune trains and validates with: input lengths 1..M·N (1..N for a method fine-tuned at
    the trained length: DroPE), the stated share of the run's
    steps at the scaled rate (``finetune_train``; ``method``: PoSE at equal tokens takes M times the steps)."""
    multiple = 1 if method is not None and method.at_trained_length else cfg.eval.recalibrate_multiple  # DroPE: 1..N
    data = dataclasses.replace(cfg.data, train_max=multiple * cfg.data.train_max)
    return dataclasses.replace(cfg, data=data, train=finetune_train(cfg.train, cfg.eval, method))


def with_longer_lengths(data: LengthData, longest: int) -> LengthData:
    """``data`` (its training and validation splits at 1..N) with training and validation sequences at every length
    N+1..``longest`` (``longer_sources``); ``data`` itself where ``longest`` is N."""
    if longest <= data.config.train_max:
        return data
    train, val = longer_sources(data.config, data.problem.name, longest,
                                tuple((n, tuple(map(tuple, data.splits["test"][n].tolist())))
                                      for n in range(data.config.train_max + 1, longest + 1)
                                      if n in data.splits["test"]))
    splits = {**data.splits, "train": {**data.splits["train"], **train}, "val": {**data.splits["val"], **val}}
    return LengthData(data.config, data.problem, splits)


@cache  # a (task, scheme)'s fine-tunes read the same sequences: drawn once a process
def longer_sources(cfg: LengthDataConfig, problem_name: str, longest: int,
                   tests: tuple[tuple[int, tuple[tuple[int, ...], ...]], ...]):
    """({n: training sources}, {n: validation sources}) at n = N+1..``longest``: as many a length as the prepared
    training split holds at each trained length (``make_splits``), none of them one of ``tests`` (n: the test
    sources of that length), the last fifth of each (at most ``VAL_PER_LENGTH``; none of a single one) for
    validation; a length whose every sequence is a test one is left out."""
    problem, exclude = PROBLEMS[problem_name], dict(tests)
    generator = torch.Generator().manual_seed(cfg.seed + DATA_OFFSET)
    per_length = math.ceil(cfg.n_train / cfg.train_max)
    train, val = {}, {}
    for n in range(cfg.train_max + 1, longest + 1):
        excluded = set(exclude.get(n, ()))
        count = min(per_length, problem.capacity(cfg, n) - len(excluded))
        if problem.draws_sources:
            sources = problem.draw(cfg, n, count, generator, exclude=excluded)
        else:
            base, width = problem.alphabet(cfg.n_symbols), problem.source_length(n)
            codes = {sum(d * base**i for i, d in enumerate(reversed(row))) for row in excluded}
            sources = decode_codes(distinct_codes(base**width, count, generator, exclude=codes), width, base)
        if count < 1:  # every sequence of this length is a test one: the fine-tune reads the others
            continue
        k = min(VAL_PER_LENGTH, max(1, count // 5)) if count >= 2 else 0  # as ``split_validation``
        train[n] = sources[:count - k]
        if k:
            val[n] = sources[count - k:]
    return train, val


def longer_batches(batches: Callable[..., Callable[[int], Batch]], tuning: TaskConfig, data: LengthData,
                   seed: int) -> Callable[[int], Batch]:
    """The fine-tune's batches: the task's ``batches`` (one length a step, drawn uniformly) over lengths 1..M·N
    (``with_longer_lengths``), the picks seeded by the run's seed and ``SEED_OFFSET``. Defined here, so that the
    fine-tune's identity (``runner.recalibrate``: the source of its batches) covers this module."""
    next_batch = batches(tuning, with_longer_lengths(data, tuning.data.train_max), seed + SEED_OFFSET)

    def next_longer_batch(step: int) -> Batch:
        return next_batch(step)

    return next_longer_batch


def pose_positions(length: int, longest: int, generator: torch.Generator) -> torch.Tensor:
    """(length,) PoSE's positions for a row of ``length`` tokens read as if up to ``longest`` (M·row_length(N)):
    0..r−1 for the first chunk, r ~ U{1, ⌈length/2⌉}, then r + u.. for the rest, u ~ U{0, longest − length} (the
    skip), so no position exceeds ``longest`` − 1 (the reference's ``train_preprocess_function_pose`` with two chunks,
    the row kept whole as the LM's passkey rows are: a length task's answer depends on all of it)."""
    r = int(torch.randint(1, (length + 1) // 2 + 1, (1,), generator=generator))
    skip = int(torch.randint(0, max(0, longest - length) + 1, (1,), generator=generator))
    ids = torch.arange(length)
    return torch.where(ids < r, ids, ids + skip)


def pose_batches(next_batch: Callable[[int], Batch], longest: int, seed: int,
                 groups: int = POSE_GROUPS) -> Callable[[int], Batch]:
    """PoSE's batches: ``next_batch``'s rows (the training lengths 1..N) and (G, T) positions, one row of them per
    group of B/G rows, drawn from a generator of their own (resumable: the loop replays the stream up to a resumed
    step)."""
    generator = torch.Generator().manual_seed(seed + SEED_OFFSET + 1)

    def next_pose_batch(step: int) -> Batch:
        tokens, targets = next_batch(step)
        g = math.gcd(len(tokens), groups)
        positions = torch.stack([pose_positions(tokens.shape[1], longest, generator) for _ in range(g)])
        return tokens, targets, positions

    return next_pose_batch


def pose_loss(model, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The answer's cross-entropy on PoSE's rows, each group read at its positions; the mean over groups of equal
    rows (one length a batch: equal answer counts) is the batch's mean."""
    tokens, targets, positions = batch
    losses = []
    for x, y, p in zip(tokens.chunk(len(positions)), targets.chunk(len(positions)), positions):
        logits, _ = model(x, positions=p)  # (B/G, T, V)
        losses.append(F.cross_entropy(loss_logits(logits.flatten(0, 1)), y.flatten(), ignore_index=IGNORE))
    return torch.stack(losses).mean(), (targets != IGNORE).sum()
