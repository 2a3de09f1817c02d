"""One metric's values per seed from the tidy records, and each scheme against the reference scheme declared in
params, paired by seed (a seed fixes the batch order and shared initial weights for every scheme): the mean
difference with its t-interval, the exact sign-flip p with its Holm adjustment across schemes, the paired t-test."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pelab.stats import holm, paired_t_test, sign_flip_test, summarize


_EMPTY = (np.zeros(0, dtype="int64"), np.zeros(0, dtype="float64"))
# the last few frames': (frame, its length, {group key: (seeds, values)})
_INDEXES: list[tuple[pd.DataFrame, int, dict[tuple[str, str, str, str], tuple[np.ndarray, np.ndarray]]]] = []


def _rows(records: pd.DataFrame, task: str, scheme: str, split: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The seeds and values of one run group at length "all", sorted by seed. The frame is grouped once and the
    groups looked up after (a report asks for some 10,000 groups of a frame of 10⁵–10⁶ rows: a boolean mask each
    took 86 of the default study's 370 report seconds), each group two arrays (a data frame per group took 20 s a
    frame to build in the default study's report, profiled); the records are read-only once loaded."""
    for frame, rows, index in _INDEXES:
        if frame is records and rows == len(records):
            break
    else:
        table = records.loc[records["length"] == "all", ["task", "pe", "split", "metric", "seed", "value"]]
        table = table.sort_values("seed", kind="stable")
        seeds, values = table["seed"].to_numpy(), table["value"].to_numpy()
        index = {key: (seeds[at], values[at])
                 for key, at in table.groupby(["task", "pe", "split", "metric"], sort=False).indices.items()}
        _INDEXES[:] = [(records, len(records), index), *_INDEXES[:3]]
    return index.get((task, scheme, split, metric), _EMPTY)


def seed_values(records: pd.DataFrame, task: str, scheme: str, split: str, metric: str) -> list[float]:
    return _rows(records, task, scheme, split, metric)[1].tolist()


def seed_summary(records: pd.DataFrame, task: str, scheme: str, split: str, metric: str) -> dict[str, float]:
    """``stats.summarize`` of ``seed_values``: mean, sd, t-interval, n."""
    return summarize(seed_values(records, task, scheme, split, metric))


def seed_map(records: pd.DataFrame, task: str, scheme: str, split: str, metric: str) -> dict[int, float]:
    seeds, values = _rows(records, task, scheme, split, metric)
    return dict(zip(seeds.astype(int).tolist(), values.tolist()))


def best_scheme(records: pd.DataFrame, task: str, schemes: list[str], split: str, metric: str) -> str:
    return max(schemes, key=lambda s: seed_summary(records, task, s, split, metric)["mean"])


def reference_tests(records: pd.DataFrame, task: str, schemes: list[str], reference: str, split: str,
                    metric: str) -> dict[str, dict[str, float]]:
    """Each scheme against the reference, paired by seed: mean difference with its t-interval, the exact
    sign-flip p, its Holm adjustment across the schemes compared, and the paired t-test p."""
    ref = seed_map(records, task, reference, split, metric)
    out = {}
    for scheme in schemes:
        if scheme == reference:
            continue
        mine = seed_map(records, task, scheme, split, metric)
        common = sorted(set(mine) & set(ref))
        a, b = [mine[k] for k in common], [ref[k] for k in common]
        diff = summarize([x - y for x, y in zip(a, b)]) if common else {"ci_low": math.nan, "ci_high": math.nan}
        out[scheme] = {**sign_flip_test(a, b), "t_p": paired_t_test(a, b)["p"] if common else math.nan,
                       "ci_low": diff["ci_low"], "ci_high": diff["ci_high"]}
    for scheme, adjusted in zip(out, holm([t["p"] for t in out.values()])):
        out[scheme]["holm_p"] = adjusted
    return out
