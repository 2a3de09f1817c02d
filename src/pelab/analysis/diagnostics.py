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


# each task's score beyond its training lengths: the first of these its records hold. Token accuracy, the length
# study's ranking metric and copy's longer-test headline: exact match beyond N is 0 for nearly every scheme at
# quick, which would make "best" and "worst" arbitrary
BEYOND_SCORES = (BeyondScore("beyond", "token_accuracy", "token accuracy beyond N", True),
                 BeyondScore("test_long", "token_accuracy", "token accuracy, long", True),
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
    # each scheme's scores in one pass over the records (a mask of every record per scheme was most of the table)
    scores = {} if score is None else records[
        (records["task"] == task) & (records["split"] == score.split) & (records["metric"] == score.metric)
        & (records["length"] == "all")].groupby("pe", sort=False)["value"].agg(list).to_dict()
    out = {}
    for scheme in dict.fromkeys(sel["pe"]):
        out[scheme] = Change(scores.get(scheme, []),
                             {m: tuple(summarize(means[scheme].tolist()) if scheme in means else MISSING
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
# the queries just below the training length against those from it on, in the same rows
COMPARED = ("attn_entropy", "first_token_share", "attn_distance")
BINS = ("within", "beyond")
BAND = 8  # the within bin's width, L // BAND positions below L (``pelab.probe.diagnostics.BAND``)
# a rise is read as a scheme's own only past the window-of-L null by this much: e^0.1, about 10% more keys' worth
RISE_MARGIN = 0.1


def window_null(tokens: int, trained: int) -> dict[str, float]:
    """The beyond − within change of each binned diagnostic in rows of ``tokens`` that a causal model attending
    uniformly to exactly its last ``trained`` keys (a perfect extrapolator) would read: query i sees n_i = min(i + 1,
    L) keys, entropy log n_i, first-token share 1/n_i while the first token is in its window (i < L) and 0 after,
    distance (n_i − 1)/2. The bins are ``binned``'s: within L − L // BAND <= i < L (i > 0), beyond i >= L."""
    band = [i for i in range(max(1, trained - max(1, trained // BAND)), trained)]
    beyond = range(trained, tokens)
    if not band or not beyond:
        return {m: float("nan") for m in COMPARED}
    n = {i: min(i + 1, trained) for i in (*band, trained)}

    def mean(values) -> float:
        values = list(values)
        return sum(values) / len(values)

    within = {"attn_entropy": mean(math.log(n[i]) for i in band), "first_token_share": mean(1 / n[i] for i in band),
              "attn_distance": mean((n[i] - 1) / 2 for i in band)}
    after = {"attn_entropy": math.log(trained), "first_token_share": 0.0, "attn_distance": (trained - 1) / 2}
    return {m: after[m] - within[m] for m in COMPARED}


class Reading(NamedTuple):
    """What the reading of one task's changes says: per scheme its mean score beyond training ({} without a score)
    and, in the longest probed rows, the rise of raw attention entropy from the queries just below the training
    length to those beyond it; the schemes whose entropy rises most and least, and whose first-token share beyond
    the training length is highest (with that share); the schemes by score, best first ([] where no two scores
    differ, to 6 decimals); Spearman's ρ of score with rise; the rise a perfect extrapolator reads in those rows
    (``window_null``, nan where unknown) and the schemes whose rise exceeds it by ``RISE_MARGIN``."""

    scores: dict[str, float]
    rises: dict[str, float]
    most: str
    least: str
    sink: str
    sink_value: float
    ranked: list[str]
    rho: float | None
    null: float = float("nan")
    diluted: tuple[str, ...] = ()


def reading(found: dict[str, Change], score: BeyondScore | None, null: float = float("nan")) -> Reading:
    """The ``Reading`` of one task's ``changes`` over the binned metrics (``COMPARED`` × ``BINS``); ``null``: the
    entropy rise of a perfect extrapolator in the longest rows (``window_null``)."""
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
    diluted = () if math.isnan(null) else tuple(s for s in sorted(rises, key=rises.get, reverse=True)
                                                if rises[s] > null + RISE_MARGIN)
    return Reading(scores, rises, max(rises, key=rises.get), min(rises, key=rises.get), sink, sinks[sink], ranked,
                   rank_correlation(scores, rises) if ranked else None, null, diluted)


def slow_pairs(bands: pd.DataFrame, trained: float) -> tuple[int, list[float]]:
    """One scheme's rotary pairs (its ``rope_band_<f>_share`` / ``_period`` rows) whose period exceeds ``trained``
    positions: how many, and their summed share per seed."""
    periods = bands[bands["metric"].str.endswith("_period")].groupby("metric")["value"].mean()
    slow = {m.replace("_period", "_share") for m, v in periods.items() if v > trained}
    return len(slow), bands[bands["metric"].isin(slow)].groupby("seed")["value"].sum().tolist()
