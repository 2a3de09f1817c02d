"""Cross-task ranking of schemes by a score: mean reciprocal rank (MRR), as the NoPE study ranks schemes across its
tasks (Kazemnejad et al. 2023, https://arxiv.org/abs/2305.19466, §4).

For each task the schemes are ranked by a score (rank 1 = best; ties share the mean of their ranks); a scheme's MRR
is the mean over tasks of 1/rank. Its stability: the same ranking done on each seed's runs alone (the seeds pair
across schemes), giving one MRR per seed, and how often the scheme ranks first.
"""

from __future__ import annotations

import pandas as pd
from scipy.stats import rankdata


def reciprocal_ranks(scores: dict[str, float]) -> dict[str, float]:
    """{scheme: score} (higher is better) -> {scheme: 1/rank}, ties at their mean rank."""
    names = list(scores)
    ranks = rankdata([-scores[n] for n in names], method="average")
    return {n: 1.0 / r for n, r in zip(names, ranks)}


def mean_reciprocal_rank(table: pd.DataFrame) -> pd.Series:
    """table: rows = tasks, columns = schemes, values = scores. Returns MRR per scheme."""
    rr = pd.DataFrame([reciprocal_ranks(row.to_dict()) for _, row in table.iterrows()], index=table.index)
    return rr.mean(axis=0)


def ranking(scores: pd.DataFrame) -> pd.DataFrame:
    """scores: columns task, pe, seed, value. Returns per scheme: ``mrr`` (ranking the seed means), ``mrr_mean``
    and ``mrr_sd`` (the ranking redone on each seed alone) and ``first`` (share of (task, seed) in which it is
    ranked first, ties counted), sorted by ``mrr``."""
    means = scores.groupby(["task", "pe"])["value"].mean().unstack("pe")
    overall = mean_reciprocal_rank(means)
    per_seed = {seed: mean_reciprocal_rank(group.pivot(index="task", columns="pe", values="value"))
                for seed, group in scores.groupby("seed")}
    by_seed = pd.DataFrame(per_seed)  # rows = schemes, columns = seeds
    firsts = []
    for _, group in scores.groupby(["task", "seed"]):
        best = group["value"].max()
        firsts.append({pe: float(v == best) for pe, v in zip(group["pe"], group["value"])})
    out = pd.DataFrame({"mrr": overall, "mrr_mean": by_seed.mean(axis=1), "mrr_sd": by_seed.std(axis=1, ddof=1),
                        "first": pd.DataFrame(firsts).mean(axis=0)})
    return out.sort_values("mrr", ascending=False)
