"""The per-run probe's attention diagnostics (``pelab.probe``: records of split ``probe``) summarised over seeds:
each probed row length against the run's training length, each scheme's change from the training length to the
longest probed one beside the task's score beyond its training lengths, and the rotary pairs slower than the
training length. Pure functions of the tidy records."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from pelab.stats import summarize


class BeyondScore(NamedTuple):
    split: str
    metric: str
    label: str
    higher_is_better: bool


# each task's score beyond its training lengths: the first of these its records hold
BEYOND_SCORES = (BeyondScore("beyond", "exact_match", "exact match beyond N", True),
                 BeyondScore("test_long", "exact_match", "exact match, long", True),
                 BeyondScore("at_4L", "ppl_ratio", "ppl(4L)/ppl(L)", False))


def relative_lengths(probe: pd.DataFrame) -> pd.DataFrame:
    """Per-length probe rows with ``tokens`` (the row length) and ``ratio`` = tokens / the run's longest training
    row (its ``trained_length`` row)."""
    trained = probe[probe["metric"] == "trained_length"].set_index(["task", "pe", "seed"])["value"]
    rows = probe[probe["length"] != "all"].copy()
    rows["tokens"] = rows["length"].astype(int)
    rows["ratio"] = rows["tokens"] / trained.reindex(pd.MultiIndex.from_frame(rows[["task", "pe", "seed"]])).values
    return rows


def beyond_score(records: pd.DataFrame, task: str) -> BeyondScore | None:
    """The first of ``BEYOND_SCORES`` the task's records hold, or None."""
    return next((s for s in BEYOND_SCORES if not records[(records["task"] == task) & (records["split"] == s.split)
                                                         & (records["metric"] == s.metric)].empty), None)


MISSING = {"mean": float("nan"), "sd": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": 0}


class Change(NamedTuple):
    """One scheme of one task: its score beyond training, one value per seed in record order ([] where there is no
    score), and per diagnostic the summaries over seeds (``stats.summarize``) at the training length and at the
    longest probed row."""

    score: list[float]
    diagnostics: dict[str, tuple[dict[str, float], dict[str, float]]]


def changes(rows: pd.DataFrame, records: pd.DataFrame, task: str, metrics: list[str],
            score: BeyondScore | None) -> tuple[dict[str, Change], float, float]:
    """Per scheme of ``task`` (in the order of ``rows``, from ``relative_lengths``) its ``Change``; and the lowest
    and highest length ratio probed. The training length is the ratio 1 where probed, else the lowest."""
    sel = rows[rows["task"] == task]
    low, high = sel["ratio"].min(), sel["ratio"].max()
    trained = sel[np.isclose(sel["ratio"], 1.0)]
    at_train, longest = (trained if not trained.empty else sel[sel["ratio"] == low]), sel[sel["ratio"] == high]

    # (pe, seed) -> mean per diagnostic, at the training length and at the longest row
    at = {m: [frame[frame["metric"] == m].groupby(["pe", "seed"])["value"].mean() for frame in (at_train, longest)]
          for m in metrics}
    out = {}
    for scheme in dict.fromkeys(sel["pe"]):
        values = [] if score is None else records[
            (records["task"] == task) & (records["pe"] == scheme) & (records["split"] == score.split)
            & (records["metric"] == score.metric) & (records["length"] == "all")]["value"].tolist()
        out[scheme] = Change(values, {m: tuple(summarize(means[scheme].tolist()) if scheme in means else MISSING
                                               for means in at[m])  # missing: a bin the row does not have
                                      for m in metrics})
    return out, low, high


def rank_correlation(scores: dict[str, float], rises: dict[str, float]) -> float | None:
    """Spearman's ρ across schemes of the score with the rise, where it says something: at least four schemes,
    neither side constant (to 6 decimals); else None."""
    constant = lambda values: len(set(np.round(list(values), 6))) <= 1  # noqa: E731
    if len(scores) < 4 or constant(scores.values()) or constant(rises.values()):
        return None
    return float(spearmanr([scores[s] for s in scores], [rises[s] for s in scores]).statistic)


# the binned diagnostics (``pelab.probe.diagnostics.binned``) the table and the reading compare, at the longest row:
# the queries before the training length against those from it on, in the same rows
COMPARED = ("attn_entropy", "first_token_share", "attn_distance")
BINS = ("within", "beyond")


class Reading(NamedTuple):
    """What the reading of one task's changes says: per scheme its mean score beyond training ({} without a score)
    and, in the longest probed rows, the rise of raw attention entropy from the queries before the training length
    to those beyond it; the schemes whose entropy rises most and least, and whose first-token share beyond the
    training length is highest (with that share); the schemes by score, best first ([] where no two scores differ,
    to 6 decimals); Spearman's ρ of score with rise."""

    scores: dict[str, float]
    rises: dict[str, float]
    most: str
    least: str
    sink: str
    sink_value: float
    ranked: list[str]
    rho: float | None


def reading(found: dict[str, Change], score: BeyondScore | None) -> Reading:
    """The ``Reading`` of one task's ``changes`` over the binned metrics (``COMPARED`` × ``BINS``)."""
    scores = {s: summarize(c.score)["mean"] for s, c in found.items()} if score else {}
    longest = {s: {m: v[1]["mean"] for m, v in c.diagnostics.items()} for s, c in found.items()}
    # a scheme without a beyond bin (its longest row within the training length) is left out of both
    rises = {s: d["attn_entropy_beyond"] - d["attn_entropy_within"] for s, d in longest.items()
             if not math.isnan(d["attn_entropy_beyond"])}
    sinks = {s: d["first_token_share_beyond"] for s, d in longest.items() if s in rises}
    if not rises:
        raise ValueError("no probed row is longer than the training length: nothing to compare beyond it")
    sink = max(sinks, key=sinks.get)
    differ = score is not None and len(set(np.round(list(scores.values()), 6))) > 1
    ranked = sorted(scores, key=scores.get, reverse=score.higher_is_better) if differ else []
    return Reading(scores, rises, max(rises, key=rises.get), min(rises, key=rises.get), sink, sinks[sink], ranked,
                   rank_correlation(scores, rises) if ranked else None)


def slow_pairs(bands: pd.DataFrame, trained: float) -> tuple[int, list[float]]:
    """One scheme's rotary pairs (its ``rope_band_<f>_share`` / ``_period`` rows) whose period exceeds ``trained``
    positions: how many, and their summed share per seed."""
    periods = bands[bands["metric"].str.endswith("_period")].groupby("metric")["value"].mean()
    slow = {m.replace("_period", "_share") for m, v in periods.items() if v > trained}
    return len(slow), bands[bands["metric"].isin(slow)].groupby("seed")["value"].sum().tolist()
