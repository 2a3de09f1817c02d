"""How finely a T5 bucket setting resolves the offsets a task uses (Raffel et al. 2020, §2.1)."""

from __future__ import annotations

import torch

from pelab.positional.functional import t5_relative_position_bucket


def buckets(offsets: list[int], num_buckets: int, max_distance: int, bidirectional: bool = True) -> list[int]:
    """The bucket of each relative offset k − q."""
    rel = torch.tensor(offsets)
    return t5_relative_position_bucket(rel, bidirectional=bidirectional, num_buckets=num_buckets,
                                       max_distance=max_distance).tolist()


def distinct_up_to(num_buckets: int, max_distance: int, bidirectional: bool = True, limit: int = 4096) -> int:
    """The largest n such that every offset of magnitude <= n has a bucket no other offset shares (both
    directions are symmetric; for a causal decoder, keys to the left)."""
    from collections import Counter

    left = buckets(list(range(0, -limit - 1, -1)), num_buckets, max_distance, bidirectional)  # offsets 0, -1, …
    counts = Counter(left)
    n = 0
    while n + 1 <= limit and counts[left[n + 1]] == 1:
        n += 1
    return n


def resolution_sentence(name: str, num_buckets: int, max_distance: int, offsets: range, what: str,
                        bidirectional: bool = True) -> str:
    """One sentence for the report: which offsets share buckets."""
    exact = distinct_up_to(num_buckets, max_distance, bidirectional)
    used = sorted(set(buckets([-o for o in offsets], num_buckets, max_distance, bidirectional)))
    shared = "each its own bucket" if len(used) == len(offsets) else f"{len(used)} buckets for {len(offsets)} offsets"
    return (f"T5 ({name}: {num_buckets} buckets, max distance {max_distance}) gives offsets up to ±{exact} a bucket "
            f"of their own; {what} (offsets {offsets.start}–{offsets.stop - 1}) get {shared}.")
