"""Effective length (RULER, Hsieh et al. 2024, https://arxiv.org/abs/2404.06654, §4): the longest evaluated length
up to which a run's accuracy stays at or above a stated threshold, at that length and at every shorter one; 0 when
the shortest evaluated length is already below it. One number per run, so its spread over seeds is reported like
any other metric."""

from __future__ import annotations

from collections.abc import Mapping


TOLERANCE = 1e-6  # accuracies are float32 means: 9/10 arrives as 0.89999998, which is "at" a threshold of 0.9


def effective_length(by_length: Mapping[int, float], threshold: float) -> int:
    """{length: accuracy} -> the longest length whose accuracy, and every shorter length's, is >= ``threshold``."""
    longest = 0
    for length in sorted(by_length):
        if by_length[length] < threshold - TOLERANCE:
            break
        longest = length
    return longest
