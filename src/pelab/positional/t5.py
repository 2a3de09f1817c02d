"""``t5``: learned relative-position bias per head over log-spaced distance buckets
(Raffel et al. 2020, §2.1, https://arxiv.org/abs/1910.10683). Bidirectional buckets in an encoder,
unidirectional in a causal decoder; one table shared by all layers of a stack, as in T5."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.functional import relative_distances, t5_relative_position_bucket


@dataclass(frozen=True)
class T5Options:
    """T5's defaults are sized for 512-token inputs; a task can size them to its lengths (``<task>.positional.t5``).
    Bidirectional: half the buckets per direction, the first half of those exact offsets, the rest log-spaced
    up to ``max_distance``; farther offsets share the last bucket."""

    num_buckets: int = 32
    max_distance: int = 128

    def __post_init__(self) -> None:
        if self.num_buckets < 4 or self.num_buckets % 2:
            raise ValueError(f"positional.t5.num_buckets must be an even number >= 4, got {self.num_buckets}")
        if self.max_distance <= self.num_buckets // 2:
            raise ValueError(
                f"positional.t5.max_distance={self.max_distance} must exceed num_buckets/2={self.num_buckets // 2} "
                "(the exact buckets of the causal form)"
            )


class T5RelativePositionalEncoding(PositionalEncoding):
    Options = T5Options

    def __init__(
        self,
        *,
        d_model: int,
        n_heads: int,
        causal: bool = False,
        n_layers: int = 1,
        num_buckets: int,
        max_distance: int,
    ) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.table = nn.Embedding(num_buckets, n_heads)  # (buckets, H)
        nn.init.normal_(self.table.weight, std=0.02)

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        buckets = t5_relative_position_bucket(
            relative_distances(q_pos, k_pos),
            bidirectional=not self.causal,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )  # (Tq, Tk)
        return self.table(buckets).permute(2, 0, 1)  # (H, Tq, Tk)

    def describe(self, usage: Usage) -> str:
        sentence = resolution(self.num_buckets, self.max_distance, usage.offsets, "the offsets it trains on",
                              not self.causal)
        if usage.long_offsets is not None:
            sentence += "; " + resolution(self.num_buckets, self.max_distance, usage.long_offsets,
                                          "the longer test's offsets", not self.causal, own=False)
        return f"{self.num_buckets} buckets, max distance {self.max_distance}: {sentence}."


def distinct_up_to(num_buckets: int, max_distance: int, bidirectional: bool = True, limit: int = 4096) -> int:
    """The largest n such that every offset of magnitude <= n has a bucket no other offset shares (both
    directions are symmetric; for a causal decoder, keys to the left)."""
    left = t5_relative_position_bucket(-torch.arange(limit + 1), bidirectional=bidirectional,  # offsets 0, -1, …
                                       num_buckets=num_buckets, max_distance=max_distance).tolist()
    counts = {b: left.count(b) for b in set(left)}
    n = 0
    while n + 1 <= limit and counts[left[n + 1]] == 1:
        n += 1
    return n


def resolution(num_buckets: int, max_distance: int, offsets: range, what: str, bidirectional: bool = True,
               own: bool = True) -> str:
    """Which offsets share buckets: 'offsets up to ±n have a bucket of their own; <what> (offsets a–b) get …'."""
    used = set(t5_relative_position_bucket(-torch.tensor(list(offsets)), bidirectional=bidirectional,
                                           num_buckets=num_buckets, max_distance=max_distance).tolist())
    shared = "each its own bucket" if len(used) == len(offsets) else f"{len(used)} buckets for {len(offsets)} offsets"
    head = (f"offsets up to ±{distinct_up_to(num_buckets, max_distance, bidirectional)} have a bucket of their own; "
            if own else "")
    return f"{head}{what} (offsets {offsets.start}–{offsets.stop - 1}) get {shared}"
