"""Markdown tables built from tidy records: mean ± sd, 95% interval, n, paired tests against the reference
scheme declared in params (exact sign-flip test, Holm-corrected; the t-test beside it), all-pairs matrices."""

from __future__ import annotations

import math

import pandas as pd

from pelab.stats import (
    format_interval,
    format_mean_sd,
    holm,
    metric_summary,
    paired_t_test,
    sign_flip_test,
    summarize,
)


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
    return "<0.001" if p < 0.001 else f"{p:.3f}"  # exact tests at n = 5 never go below 0.0625


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


FIVE_SEEDS = (
    "**What five seeds can and cannot show.** Each comparison pairs runs by seed (same batches and shared "
    "initial weights). With n = 5 the exact sign-flip test has 32 equally likely sign patterns, so its smallest "
    "possible two-sided p-value is 0.0625: five seeds can show a consistent direction (all five differences of "
    "one sign give p = 0.0625), never significance at 0.05 on their own, and after Holm's correction over the "
    "schemes compared even that weakens. The t-test can go lower only by assuming normally distributed "
    "differences, which five values cannot check. Intervals are Student-t over seeds, clipped to the metric's "
    "range; they assume roughly normal seed values, and for values piled against a bound (exact match near 1) "
    "their coverage drops to about 90% (simulated, `tests/test_stats.py`). They describe the spread of these "
    "seeds' runs, not of other data or model sizes. Differences smaller than the seed-to-seed sd should be read "
    "as ties; a ranking among them is not evidence."
)


def cost_table(records: pd.DataFrame, task: str, schemes: list[str], devices: dict[str, str] | str) -> str:
    """Parameters, time, throughput and peak memory per scheme, with the device each scheme trained on and how
    (its seeds stacked in one process, or one by one). The time per run of stacked seeds is the stack's time
    divided by its seeds; throughput and peak memory are the training process's, all its seeds together."""
    if isinstance(devices, str):
        devices = {s: devices for s in schemes}
    header = ["scheme", "device", "trained", "params (no position table)", "params (total)", "train time / run (s)",
              "tokens/s (process)", "peak memory (MB, process)"]
    rows = []
    for scheme in schemes:
        def mean(metric: str, default: float = math.nan) -> float:
            values = seed_values(records, task, scheme, "train", metric)
            return summarize(values)["mean"] if values else default

        together = int(mean("seeds_together", 1.0))
        rows.append([f"`{scheme}`", devices.get(scheme, "?"),
                     f"{together} seeds together" if together > 1 else "one by one",
                     f"{mean('params_without_positional'):,.0f}", f"{mean('params_total'):,.0f}",
                     f"{mean('wall_time_s') / together:.1f}", f"{mean('tokens_per_s'):,.0f}",
                     f"{mean('peak_memory_mb'):.0f}"])
    return markdown_table(header, rows) + (
        "\n\nTraining only (validation excluded), means over seeds; evaluation ran on the same device. Seeds "
        "trained together share one process: its time is divided among them, while its throughput and peak "
        "memory are those of all of them at once (on the CPU the process's resident set, on CUDA the allocator's "
        "peak).")
