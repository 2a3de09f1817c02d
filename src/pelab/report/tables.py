"""Markdown tables built from tidy records: mean ± sd, 95% interval, n, and paired tests vs the best."""

from __future__ import annotations

import math

import pandas as pd

from pelab.stats import format_interval, format_mean_sd, paired_t_test, summarize


def seed_values(records: pd.DataFrame, task: str, scheme: str, split: str, metric: str) -> list[float]:
    sel = records[(records["task"] == task) & (records["pe"] == scheme) & (records["split"] == split)
                  & (records["metric"] == metric) & (records["length"] == "all")]
    return sel.sort_values("seed")["value"].tolist()


def seed_map(records: pd.DataFrame, task: str, scheme: str, split: str, metric: str) -> dict[int, float]:
    sel = records[(records["task"] == task) & (records["pe"] == scheme) & (records["split"] == split)
                  & (records["metric"] == metric) & (records["length"] == "all")]
    return dict(zip(sel["seed"].astype(int), sel["value"]))


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def best_scheme(records: pd.DataFrame, task: str, schemes: list[str], split: str, metric: str) -> str:
    return max(schemes, key=lambda s: summarize(seed_values(records, task, s, split, metric))["mean"])


def format_p(p: float) -> str:
    if math.isnan(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def comparison_table(
    records: pd.DataFrame, task: str, schemes: list[str], columns: list[tuple[str, str, str]], digits: int = 3
) -> tuple[str, str]:
    """One row per scheme; columns (split, metric, title) as mean ± sd and 95% interval; the first
    column is also tested pairwise (paired t-test over seeds) against the best scheme on it.

    Returns the table and the name of the best scheme.
    """
    key_split, key_metric, _ = columns[0]
    best = best_scheme(records, task, schemes, key_split, key_metric)
    best_by_seed = seed_map(records, task, best, key_split, key_metric)
    header = ["scheme", "n"]
    for _, _, title in columns:
        header += [f"{title} (mean ± sd)", "95% CI"]
    header += [f"Δ vs {best} (paired t, p)"]
    rows = []
    for scheme in schemes:
        row = [f"`{scheme}`"]
        n = None
        for split, metric, _ in columns:
            s = summarize(seed_values(records, task, scheme, split, metric))
            n = s["n"]
            row += [format_mean_sd(s, digits), format_interval(s, digits)]
        row.insert(1, str(n))
        if scheme == best:
            row.append("best")
        else:
            mine = seed_map(records, task, scheme, key_split, key_metric)
            common = sorted(set(mine) & set(best_by_seed))
            test = paired_t_test([mine[s] for s in common], [best_by_seed[s] for s in common])
            row.append(f"{test['mean_diff']:+.{digits}f} (p={format_p(test['p'])})")
        rows.append(row)
    return markdown_table(header, rows), best


def cost_table(records: pd.DataFrame, task: str, schemes: list[str], device: str) -> str:
    header = ["scheme", "params (no position table)", "params (total)", "train time / run (s)", "tokens/s",
              "peak memory (MB)"]
    rows = []
    for scheme in schemes:
        def mean(metric: str) -> float:
            return summarize(seed_values(records, task, scheme, "train", metric))["mean"]

        rows.append([f"`{scheme}`", f"{mean('params_without_positional'):,.0f}", f"{mean('params_total'):,.0f}",
                     f"{mean('wall_time_s'):.1f}", f"{mean('tokens_per_s'):,.0f}", f"{mean('peak_memory_mb'):.0f}"])
    return markdown_table(header, rows) + f"\n\nDevice: {device}. Times are means over seeds."
