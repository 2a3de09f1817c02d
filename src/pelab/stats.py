"""Statistics over seeds: mean, sample sd, 95% intervals, and paired tests valid at n = 5.

Seeds pair naturally: for one seed every scheme sees the same data, batch order and initial
weights of the shared parameters, so scheme differences are compared seed by seed.

What five seeds can show: the exact sign-flip permutation test (Fisher 1935; Good, *Permutation Tests*)
of paired differences has 2^5 = 32 equally likely sign patterns under the null, so its smallest two-sided
p-value is 2/32 = 0.0625 — no difference over five seeds is "significant at 0.05" on its own, however
large. The t-test can go lower only by assuming normal differences. Comparisons are against a reference
scheme declared in params before the run, and Holm-corrected across schemes.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

from scipy import stats as _scipy_stats


@functools.cache  # a report asks for it some 10⁴ times, at a handful of (confidence, dof)
def t_quantile(confidence: float, dof: int) -> float:
    return float(_scipy_stats.t.ppf(0.5 + confidence / 2, dof))


def summarize(values: Sequence[float], confidence: float = 0.95) -> dict[str, float]:
    """mean, sample sd (ddof=1), t-interval half-width and bounds, n. sd/interval are nan for n < 2."""
    n = len(values)
    if n == 0:
        raise ValueError("cannot summarize zero values")
    mean = math.fsum(values) / n
    if n < 2:
        return {"mean": mean, "sd": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": n}
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(confidence, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "ci_low": mean - half, "ci_high": mean + half, "n": n}


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Two-sided paired t-test of mean(a − b) = 0 over matched seeds.

    Returns the mean difference, t statistic and p-value. When every difference is identical the
    test is degenerate: p = 1 if they are all zero, else 0 (a constant non-zero difference).
    """
    if len(a) != len(b):
        raise ValueError(f"paired test needs equal lengths, got {len(a)} and {len(b)}")
    diffs = [x - y for x, y in zip(a, b)]
    n = len(diffs)
    s = summarize(diffs)
    if n < 2:
        return {"mean_diff": s["mean"], "t": math.nan, "p": math.nan, "n": n}
    if s["sd"] == 0:
        return {"mean_diff": s["mean"], "t": math.nan if s["mean"] == 0 else math.copysign(math.inf, s["mean"]),
                "p": 1.0 if s["mean"] == 0 else 0.0, "n": n}
    t = s["mean"] / (s["sd"] / math.sqrt(n))
    p = 2 * float(_scipy_stats.t.sf(abs(t), n - 1))
    return {"mean_diff": s["mean"], "t": t, "p": p, "n": n}


def format_mean_sd(summary: dict[str, float], digits: int = 3) -> str:
    if math.isnan(summary["sd"]):
        return f"{summary['mean']:.{digits}f}"
    return f"{summary['mean']:.{digits}f} ± {summary['sd']:.{digits}f}"


def format_interval(summary: dict[str, float], digits: int = 3) -> str:
    if math.isnan(summary["ci_low"]):
        return "–"
    return f"[{summary['ci_low']:.{digits}f}, {summary['ci_high']:.{digits}f}]"


def sign_flip_test(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Exact two-sided paired permutation test of mean(a − b) = 0: every one of the 2^n sign flips of the
    differences is equally likely under the null; p = the fraction with |mean| >= the observed |mean|.
    No normality assumption; the smallest possible p is 2 / 2^n (0.0625 at n = 5)."""
    if len(a) != len(b):
        raise ValueError(f"paired test needs equal lengths, got {len(a)} and {len(b)}")
    diffs = [x - y for x, y in zip(a, b)]
    n = len(diffs)
    if n == 0:
        return {"mean_diff": math.nan, "p": math.nan, "n": 0, "min_p": math.nan}
    observed = abs(math.fsum(diffs)) / n
    tolerance = 1e-12 * max(1.0, max(abs(d) for d in diffs))
    extreme = sum(abs(math.fsum(s * d for s, d in zip(signs, diffs))) / n >= observed - tolerance
                  for signs in itertools.product((1, -1), repeat=n))
    return {"mean_diff": math.fsum(diffs) / n, "p": extreme / 2**n, "n": n, "min_p": 2 / 2**n if n else math.nan}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (Holm 1979), in the input order; nan stays nan."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    m, adjusted, running = len(indexed), [math.nan] * len(p_values), 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


# The range of each bounded metric (a suffix _beam / _greedy names the decoding): intervals never leave it.
METRIC_RANGES = {"exact_match": (0.0, 1.0), "token_accuracy": (0.0, 1.0), "bleu": (0.0, 100.0), "chrf": (0.0, 100.0),
                 "nltk_bleu": (0.0, 100.0), "nltk_char_bleu": (0.0, 100.0), "passkey": (0.0, 1.0),
                 "passkey_digits": (0.0, 1.0), "ppl_window": (1.0, math.inf), "ppl_sliding": (1.0, math.inf)}


def metric_range(metric: str) -> tuple[float, float]:
    """[low, high] of a metric; (-inf, inf) for an unbounded one (a loss, a time)."""
    base = metric.removesuffix("_beam").removesuffix("_greedy")
    return METRIC_RANGES.get(base, (-math.inf, math.inf))


def metric_summary(values: Sequence[float], metric: str, confidence: float = 0.95) -> dict[str, float]:
    """The one summary of a metric over seeds, wherever it is shown (reports/summary.json, the report's tables):
    ``summarize``'s mean, sd and Student-t interval, the interval clipped to the metric's range.

    Clipping drops only values the metric cannot take, so the interval covers the true mean whenever the
    t-interval does. The percentile bootstrap over five seeds, used before, cannot reach beyond the observed
    values and covers about 84% of the time at a nominal 95% (``tests/test_stats.py`` simulates both)."""
    s = summarize(values, confidence)
    low, high = metric_range(metric)
    if math.isnan(s["ci_low"]):
        return s
    return {**s, "ci_low": min(max(s["ci_low"], low), high), "ci_high": max(min(s["ci_high"], high), low)}
