"""Markdown tables built from tidy records: mean ± sd, 95% interval, n, paired tests against the reference
scheme declared in params (exact sign-flip test, Holm-corrected; the t-test beside it), all-pairs matrices."""

from __future__ import annotations

import math

import pandas as pd

from pelab.analysis.paired import best_scheme, reference_tests, seed_map, seed_values
from pelab.report.render import fill
from pelab.stats import format_interval, format_mean_sd, metric_summary, summarize


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def format_p(p: float) -> str:
    if math.isnan(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"  # exact tests at n = 5 never go below 0.0625


def comparison_table(
    records: pd.DataFrame, task: str, schemes: list[str], columns: list[tuple[str, str, str]], digits: int = 3,
    reference: str | None = None,
) -> tuple[str, str]:
    """One row per scheme; columns (split, metric, title) as mean ± sd and 95% interval (``metric_summary``);
    the first column is also compared with the ``reference`` scheme (declared in params before the run).

    Returns the table and the name of the scheme with the highest mean on the first column (descriptive only).
    """
    key_split, key_metric, _ = columns[0]
    best = best_scheme(records, task, schemes, key_split, key_metric)
    header = ["scheme", "n"]
    for _, _, title in columns:
        header += [f"{title} (mean ± sd)", "95% CI"]
    tests = {}
    if reference in schemes:
        tests = reference_tests(records, task, schemes, reference, key_split, key_metric)
        header += [f"Δ vs `{reference}` [95% CI]", "sign-flip p (Holm)", "t-test p"]
    rows = []
    for scheme in schemes:
        row = [f"`{scheme}`"]
        n = None
        for split, metric, _ in columns:
            s = metric_summary(seed_values(records, task, scheme, split, metric), metric)
            n = s["n"]
            row += [format_mean_sd(s, digits), format_interval(s, digits)]
        row.insert(1, str(n))
        if tests:
            if scheme == reference:
                row += ["reference", "", ""]
            else:
                t = tests[scheme]
                ci = "" if math.isnan(t["ci_low"]) else f" [{t['ci_low']:+.{digits}f}, {t['ci_high']:+.{digits}f}]"
                row += [f"{t['mean_diff']:+.{digits}f}{ci}", f"{format_p(t['p'])} ({format_p(t['holm_p'])})",
                        format_p(t["t_p"])]
        rows.append(row)
    table = markdown_table(header, rows)
    notes = ["Intervals: Student-t over seeds, clipped to the metric's range."]
    if reference is not None and reference not in schemes:
        notes.append(f"The reference scheme `{reference}` is not among this run's schemes: no comparisons.")
    return table + "\n\n" + " ".join(notes), best


def difference_matrix(records: pd.DataFrame, task: str, schemes: list[str], split: str, metric: str,
                      digits: int = 3) -> str:
    """All pairs: row − column, mean paired difference over seeds with its 95% t-interval."""
    rows = []
    for a in schemes:
        va = seed_map(records, task, a, split, metric)
        row = [f"`{a}`"]
        for b in schemes:
            if a == b:
                row.append("·")
                continue
            vb = seed_map(records, task, b, split, metric)
            common = sorted(set(va) & set(vb))
            d = summarize([va[k] - vb[k] for k in common])
            ci = "" if math.isnan(d["ci_low"]) else f" [{d['ci_low']:+.{digits}f}, {d['ci_high']:+.{digits}f}]"
            row.append(f"{d['mean']:+.{digits}f}{ci}")
        rows.append(row)
    return markdown_table(["row − column"] + [f"`{s}`" for s in schemes], rows)


def cost_table(records: pd.DataFrame, task: str, schemes: list[str], devices: dict[str, str] | str) -> str:
    """Parameters, time, throughput and peak memory per scheme, with the device each scheme trained on and how
    (its seeds stacked in one process, or one by one). The time per run of stacked seeds is the stack's time
    divided by its seeds; throughput and peak memory are the training process's, all its seeds together."""
    if isinstance(devices, str):
        devices = {s: devices for s in schemes}
    header = ["scheme", "device", "trained", "params (no position table)", "params (total)", "train time / run (s)",
              "tokens/s (process)", "peak memory (MB, process)"]
    rows, graphed = [], False
    for scheme in schemes:
        def mean(metric: str, default: float = math.nan) -> float:
            values = seed_values(records, task, scheme, "train", metric)
            return summarize(values)["mean"] if values else default

        together, graphs = int(mean("seeds_together", 1.0)), mean("cuda_graphs", 0.0) > 0
        graphed |= graphs
        rows.append([f"`{scheme}`", devices.get(scheme, "?"),
                     (f"{together} seeds together" if together > 1 else "one by one") + ", CUDA graphs" * graphs,
                     f"{mean('params_without_positional'):,.0f}", f"{mean('params_total'):,.0f}",
                     f"{mean('wall_time_s') / together:.1f}", f"{mean('tokens_per_s'):,.0f}",
                     f"{mean('peak_memory_mb'):.0f}"])
    return fill("cost_table.md", table=markdown_table(header, rows), graphed=graphed)
