"""Seed statistics against numpy and scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from torch.testing import assert_close

from pelab.stats import format_interval, format_mean_sd, paired_t_test, summarize

SAMPLES = [
    [0.91, 0.87, 0.95, 0.89, 0.93],
    [1.0, 2.0],
    [0.1, 0.5, 0.2, 0.9, 0.4, 0.3, 0.8, 0.6, 0.7, 0.0],
    [12.5, -3.25, 7.0, 0.0],
]


@pytest.mark.parametrize("values", SAMPLES, ids=[f"n{len(v)}" for v in SAMPLES])
@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_summarize_matches_numpy_and_scipy(values: list[float], confidence: float) -> None:
    s = summarize(values, confidence=confidence)
    arr = np.asarray(values)
    low, high = scipy_stats.t.interval(confidence, len(arr) - 1, loc=arr.mean(), scale=scipy_stats.sem(arr))
    assert s["n"] == len(values)
    assert_close(s["mean"], float(arr.mean()), rtol=1e-12, atol=1e-12)
    assert_close(s["sd"], float(arr.std(ddof=1)), rtol=1e-12, atol=1e-12)
    assert_close(s["ci_low"], float(low), rtol=1e-12, atol=1e-12)
    assert_close(s["ci_high"], float(high), rtol=1e-12, atol=1e-12)


def test_summarize_known_values() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert s["mean"] == 2.5
    assert_close(s["sd"], math.sqrt(5 / 3))
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2  # t_{0.975, 3} · sd / sqrt(4)
    assert_close((s["ci_low"], s["ci_high"]), (2.5 - half, 2.5 + half), rtol=1e-9, atol=1e-9)


def test_summarize_degenerate() -> None:
    one = summarize([0.7])
    assert one["mean"] == 0.7 and one["n"] == 1
    assert math.isnan(one["sd"]) and math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])
    const = summarize([0.5, 0.5, 0.5])
    assert (const["mean"], const["sd"], const["ci_low"], const["ci_high"]) == (0.5, 0.0, 0.5, 0.5)
    with pytest.raises(ValueError, match="zero values"):
        summarize([])


PAIRS = [
    ([0.91, 0.87, 0.95, 0.89, 0.93], [0.85, 0.88, 0.90, 0.80, 0.91]),
    ([1.0, 2.0, 3.0], [1.5, 1.0, 3.5]),
    ([0.2, 0.4, 0.1, 0.9, 0.3, 0.6], [0.25, 0.35, 0.3, 0.7, 0.1, 0.65]),
    ([10.0, 20.0], [12.0, 17.0]),
]


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=[f"n{len(a)}-{i}" for i, (a, _) in enumerate(PAIRS)])
def test_paired_t_test_matches_scipy_ttest_rel(a: list[float], b: list[float]) -> None:
    ours = paired_t_test(a, b)
    ref = scipy_stats.ttest_rel(a, b)
    assert ours["n"] == len(a)
    assert_close(ours["mean_diff"], float(np.mean(np.subtract(a, b))), rtol=1e-12, atol=1e-12)
    assert_close(ours["t"], float(ref.statistic), rtol=1e-10, atol=1e-12)
    assert_close(ours["p"], float(ref.pvalue), rtol=1e-10, atol=1e-12)
    # the test is antisymmetric in its arguments
    swapped = paired_t_test(b, a)
    assert_close((swapped["t"], swapped["p"]), (-ours["t"], ours["p"]), rtol=1e-12, atol=1e-12)


def test_paired_t_test_all_differences_zero() -> None:
    r = paired_t_test([0.5, 0.25, 1.0], [0.5, 0.25, 1.0])
    assert r["mean_diff"] == 0.0 and r["n"] == 3
    assert math.isnan(r["t"])
    assert r["p"] == 1.0


@pytest.mark.parametrize(("a", "b", "sign"), [([2.0, 3.0, 4.0], [1.0, 2.0, 3.0], 1), ([0.0, 1.0], [0.5, 1.5], -1)])
def test_paired_t_test_constant_nonzero_difference(a: list[float], b: list[float], sign: int) -> None:
    r = paired_t_test(a, b)
    assert r["mean_diff"] == sign * abs(a[0] - b[0])
    assert r["t"] == sign * math.inf
    assert r["p"] == 0.0


def test_paired_t_test_single_pair() -> None:
    r = paired_t_test([0.9], [0.7])
    assert_close(r["mean_diff"], 0.2)
    assert r["n"] == 1 and math.isnan(r["t"]) and math.isnan(r["p"])


def test_paired_t_test_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="equal lengths, got 3 and 2"):
        paired_t_test([1.0, 2.0, 3.0], [1.0, 2.0])


def test_formatting() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert format_mean_sd(s) == "2.500 ± 1.291"
    assert format_interval(s, digits=2) == f"[{s['ci_low']:.2f}, {s['ci_high']:.2f}]" == "[0.45, 4.55]"
    one = summarize([0.25])
    assert format_mean_sd(one) == "0.250"
    assert format_interval(one) == "–"
