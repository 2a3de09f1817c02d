"""The before/after reading of recalibration (issue 56), in the LM section and the length study's: for each method,
its in-range cost and its gain beyond what the fine-tune read, on the run as trained read with the method's module
(``<scheme>+PI-untuned`` …: the same module at the same factor s = M) and after the fine-tune at M times the trained
length with it (``positional.recalibration``), as paired differences over seeds, and which verdicts the fine-tune
changes.

Before, a method is judged against its base run as trained; after, against the same run fine-tuned the same way with no
extension (``long``: the control), so the fine-tune's own effect is not counted as the method's. ``long`` itself is
judged against the run as trained. PoSE's "before" is PI's (PoSE trains with PI at s = M).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from pelab.analysis.paired import seed_map
from pelab.positional.recalibration import BY_NAME, METHODS
from pelab.report.tables import markdown_table
from pelab.stats import summarize

@dataclass(frozen=True)
class Measure:
    """What a study's before/after reading compares: ``metric`` of ``task`` in split ``within`` (the trained range:
    the in-range cost) and ``far`` (beyond what the fine-tune read: the gain), worded as the section words them."""

    task: str
    metric: str
    within: str
    far: str
    lower_is_better: bool
    digits: int
    what: str  # the measure, e.g. "sliding-window perplexity"
    tuned_on: str  # where the fine-tune read, e.g. "at 2L"
    within_label: str  # e.g. "within L"
    far_label: str  # e.g. "at 256"
    beyond_label: str  # the verdict's range, e.g. "beyond L"
    trained_on: str = "at the trained length"  # where a method fine-tuned at the trained length read (DroPE)


def lm_measure(far: int, multiple: int) -> Measure:
    """The LM's: sliding-window perplexity at L and at ``far`` (4L) after a fine-tune at M·L."""
    return Measure("lm", "ppl_sliding", "at_L", "at_4L", True, 2, "sliding-window perplexity", f"at {multiple}L",
                   "within L", f"at {far}", "beyond L")


def _differences(records: pd.DataFrame, measure: Measure, a: str, b: str, split: str) -> list[float]:
    """Per seed how much worse ``a`` reads than ``b`` in ``split`` (a − b where lower is better; matched seeds)."""
    first = seed_map(records, measure.task, a, split, measure.metric)
    second = seed_map(records, measure.task, b, split, measure.metric)
    sign = 1.0 if measure.lower_is_better else -1.0
    return [sign * (first[s] - second[s]) for s in sorted(set(first) & set(second))]


def _cell(values: list[float], digits: int) -> tuple[str, int]:
    """'mean [ci]' and the sign the interval shows (+1 above zero, −1 below, 0 neither or too few seeds)."""
    if not values:
        return "–", 0
    s = summarize(values)
    if math.isnan(s["ci_low"]):
        return f"{s['mean']:+.{digits}f}", 0
    sign = 1 if s["ci_low"] > 0 else -1 if s["ci_high"] < 0 else 0
    return f"{s['mean']:+.{digits}f} [{s['ci_low']:+.{digits}f}, {s['ci_high']:+.{digits}f}]", sign


VERDICT = {1: "helps", -1: "hurts", 0: "no clear effect"}


def recalibration_reading(records: pd.DataFrame, names: list[str], measure: Measure, multiple: int,
                          share: float) -> tuple[str, list[str]] | None:
    """(table, sentences) for every base scheme of ``measure.task`` with fine-tuned runs among ``names``
    (pseudo-schemes of ``with_variants``), or None where none was fine-tuned. Paired differences over seeds:
    in-range cost = how much worse the method reads than its baseline in ``measure.within``; gain = how much better
    in ``measure.far``."""
    labels = {m.label: m for m in METHODS}
    present = set(records.loc[records["task"] == measure.task, "pe"])
    bases = list(dict.fromkeys(n.rpartition("+")[0] for n in names if n.rpartition("+")[2] in labels and n in present))
    if not bases:
        return None
    rows, changed = [], []
    for base in bases:
        control = f"{base}+long-tuned" if f"{base}+long-tuned" in set(names) & present else None
        for method in METHODS:
            tuned = f"{base}+{method.label}"
            if tuned not in names or tuned not in present:
                continue
            zero = base if method.before is None else f"{base}+{BY_NAME[method.before].untuned_label}"
            # the control fine-tuned at M·L, except for the control itself and a method fine-tuned at L (DroPE)
            after_base = base if method.name == "long" or method.at_trained_length or control is None else control

            def cell(a: str, b: str, split: str) -> tuple[str, int]:
                return _cell(_differences(records, measure, a, b, split), measure.digits)

            cost_before, _ = cell(zero, base, measure.within) if zero != base else ("0 (the run)", 0)
            cost_after, _ = cell(tuned, after_base, measure.within)
            gain_before, sign_before = cell(base, zero, measure.far) if zero != base else ("0 (the run)", 0)
            gain_after, sign_after = cell(after_base, tuned, measure.far)
            rows.append([f"`{tuned}`", f"`{zero}`" if zero != base else "(as trained)", cost_before, gain_before,
                         f"`{after_base}`", cost_after, gain_after])
            if zero != base and sign_before != sign_after:
                changed.append(f"`{base}`'s {method.label.removesuffix('-tuned')} {measure.beyond_label}: "
                               f"{VERDICT[sign_before]} before, {VERDICT[sign_after]} after the fine-tune")
    table = markdown_table(["fine-tuned run", "before: the run read with its module", "in-range cost, before",
                            f"gain {measure.far_label}, before", "judged after against", "in-range cost, after",
                            f"gain {measure.far_label}, after"], rows)
    lead = (f"Each run fine-tuned {measure.tuned_on} for {share:.0%} of its training steps with each method in place "
            f"(fixed at s = {multiple}), then scored again; before: the run as trained read with the same module "
            f"({measure.what}; mean over seeds of the paired differences, [95% t-interval]; a cost above 0 is worse "
            f"{measure.within_label}, a gain above 0 better {measure.far_label}).")
    if any(f"+{BY_NAME['drope'].label}" in row[0] for row in rows):
        lead += (f" DroPE is the exception: RoPE dropped, the run fine-tuned {measure.trained_on} with no positions, "
                 "and judged after against the run as trained.")
    sentences = [lead] + (["What the fine-tune changes: " + "; ".join(changed) + "."] if changed else
                          [f"No verdict {measure.beyond_label} changes sign once the fine-tune is in (at 95%, where "
                           "both were read)."])
    return table, sentences
