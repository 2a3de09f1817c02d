"""Recalibration: a trained LM run fine-tuned briefly at M·L with a context-extension method in place, then scored on
the whole grid with that method, as the extension papers judge their methods (issue 56). The zero-shot readings of the
same runs are ``rope_extensions.MENU``'s; these are the same methods after one short fine-tune.

The methods (``pelab.positional.recalibration``): ``long`` (the control: no extension, rows of M·L tokens), ``pi``,
``ntk``, ``yarn`` (each fixed at s = M, M = ``lm.eval.recalibrate_multiple``), and ``pose``: positional skip-wise
training (Zhu et al., ICLR 2024, https://arxiv.org/abs/2309.10400, §3.2; reference dwzhu-pku/PoSE ``train_pose.py``,
``train_preprocess_function_pose``) with PI at s, as the paper's main results: rows of L tokens whose positions cover
0..M·L−1 (``pose_batch``), so a step reads 1/M of the tokens the others read. PI's paper fine-tunes ~1,000 steps,
YaRN's 400.

Every method of a run fine-tunes from the run's kept weights (its best validation step) with the same budget: a share
``lm.eval.recalibrate_share`` of the run's training steps, the same number of rows a step, the run's learning rate
times ``lm.eval.recalibrate_lr`` under the same warmup-and-cosine schedule (warmup 5% of the fine-tune, as PI's 20 of
1,000 and YaRN's 20 of 400 steps), AdamW's moments fresh, and the same rows in the same order (the task's stream at
M·L, seeded by the run's seed and ``SEED_OFFSET``: not the rows its training began with). Each keeps its step of lowest
validation loss at M·L with its method in place.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from pelab.positional.recalibration import Method, finetune_train
from pelab.tasks.base import Batch, TaskConfig, loss_logits

SEED_OFFSET = 7_000_003  # the fine-tune's row stream: seed + this, the same for every method of a run
POSE_GROUPS = 4  # PoSE draws its chunk split and skip this many times a batch (rows of a group share positions)


def finetune_config(cfg: TaskConfig, method: Method | None = None) -> TaskConfig:
    """The task config a fine-tune trains and validates with: rows of M·L tokens (L for a method fine-tuned at the
    trained length: DroPE), the stated share of the run's
    (budgeted) steps at the scaled rate (``finetune_train``; ``method``: PoSE at equal tokens takes M times the
    steps)."""
    train = dataclasses.replace(finetune_train(cfg.train, cfg.eval, method), epochs=None)
    multiple = 1 if method is not None and method.at_trained_length else cfg.eval.recalibrate_multiple  # DroPE: at L
    data = dataclasses.replace(cfg.data, context=multiple * cfg.data.context)
    return dataclasses.replace(cfg, data=data, train=train)


def pose_batch(text: torch.Tensor, passkey: torch.Tensor | None, context: int, generator: torch.Generator,
               groups: int = POSE_GROUPS) -> Batch:
    """PoSE's rows of L + 1 tokens from text rows of M·L + 1 tokens (B − P, M·L + 1) and passkey rows of L + 1 tokens
    (P, L + 1) or None: inputs, targets (B, L) and positions (G, L), one row of positions per group of B/G rows
    (text rows first, as the batch's rows come).

    As the reference's ``train_preprocess_function_pose`` with two chunks, on the L + 1 tokens of a row (the inputs
    and targets of L predictions): the positions are 0..r−1 for the first chunk, r ~ U{1, ⌈(L+1)/2⌉}, then r + u..
    for the second, u ~ U{0, M·L − L} (the skip; the reference's revised lt = 0), so no input position exceeds
    M·L − 1. A text row's first chunk is its first r tokens, its second the L + 1 − r tokens ending at e ~
    U{L + 1, M·L + 1} (per row). A passkey row is read whole at those positions: its key and answer stay in the row (a
    row cut from one of M·L + 1 tokens would keep its answer only if e fell on the last token), and the skip puts the
    filler between them at distances up to M·L, as PoSE simulates a long row."""
    rows = list(text) + ([] if passkey is None else list(passkey))
    n, total, length = len(rows), text.shape[1], context + 1
    groups = math.gcd(n, groups)
    out, positions, size = [], [], n // groups
    ids = torch.arange(length)
    for g in range(groups):
        r = int(torch.randint(1, (length + 1) // 2 + 1, (1,), generator=generator))
        skip = int(torch.randint(0, total - length + 1, (1,), generator=generator))
        for row in rows[g * size:(g + 1) * size]:
            if len(row) == length:  # a passkey row
                out.append(row)
                continue
            end = int(torch.randint(length, total + 1, (1,), generator=generator))
            out.append(torch.cat([row[:r], row[end - (length - r):end]]))
        positions.append(torch.where(ids < r, ids, ids + skip)[:-1])
    chunked = torch.stack(out)  # (B, L + 1)
    return chunked[:, :-1], chunked[:, 1:], torch.stack(positions)


def pose_loss(model, batch: Batch) -> tuple[torch.Tensor, int]:
    """The LM loss on PoSE's rows: each group read at its positions; the mean over equal groups is the batch mean."""
    inputs, targets, positions = batch
    losses = []
    for x, y, p in zip(inputs.chunk(len(positions)), targets.chunk(len(positions)), positions):
        logits, _ = model(x, p)  # (B/G, L, V)
        losses.append(F.cross_entropy(loss_logits(logits.flatten(0, 1)), y.flatten()))
    return torch.stack(losses).mean(), targets.numel()


def pose_batches(next_rows: Callable[[int], tuple[torch.Tensor, torch.Tensor | None]], context: int,
                 seed: int) -> Callable[[int], Batch]:
    """PoSE's batches from ``next_rows`` (``LMTask.rows``: the text rows of M·L + 1 tokens every method reads, the
    passkey rows at L + 1), the draws from a generator of their own (resumable: the loop replays the stream up to a
    resumed step)."""
    generator = torch.Generator().manual_seed(seed + SEED_OFFSET + 1)

    def next_pose_batch(step: int) -> Batch:
        text, passkey = next_rows(step)
        return pose_batch(text, passkey, context, generator)

    return next_pose_batch
