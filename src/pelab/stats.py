"""Statistics over seeds: mean, sample sd, Student-t 95% interval, paired t-test.

Seeds pair naturally: for one seed every scheme sees the same data, batch order and initial
weights of the shared parameters, so scheme differences are compared seed by seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy import stats as _scipy_stats


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
