"""The LM section's before/after reading of recalibration (issue 56): for each method, its in-range cost and its
beyond-range gain on the run as trained read with the method's module (``<scheme>+PI-untuned`` …: the same module at the
same factor s = M) and after the fine-tune at M·L with it (``positional.recalibration``), as paired differences over
seeds, and which verdicts the fine-tune changes.

Before, a method is judged against its base run as trained; after, against the same run fine-tuned the same way with no
extension (``long``: the control), so the fine-tune's own effect is not counted as the method's. ``long`` itself is
judged against the run as trained. PoSE's "before" is PI's (PoSE trains with PI at s = M).
"""

from __future__ import annotations

import math

import pandas as pd

from pelab.analysis.paired import seed_map
from pelab.positional.recalibration import BY_NAME, METHODS
from pelab.report.tables import markdown_table
from pelab.stats import summarize

TASK = "lm"


def _differences(records: pd.DataFrame, a: str, b: str, split: str, metric: str = "ppl_sliding") -> list[float]:
    """Per seed a − b (matched seeds only)."""
    first, second = seed_map(records, TASK, a, split, metric), seed_map(records, TASK, b, split, metric)
    return [first[s] - second[s] for s in sorted(set(first) & set(second))]


def _cell(values: list[float]) -> tuple[str, int]:
    """'mean [ci]' and the sign the interval shows (+1 above zero, −1 below, 0 neither or too few seeds)."""
    if not values:
        return "–", 0
    s = summarize(values)
    if math.isnan(s["ci_low"]):
        return f"{s['mean']:+.2f}", 0
    sign = 1 if s["ci_low"] > 0 else -1 if s["ci_high"] < 0 else 0
    return f"{s['mean']:+.2f} [{s['ci_low']:+.2f}, {s['ci_high']:+.2f}]", sign


VERDICT = {1: "helps", -1: "hurts", 0: "no clear effect"}


def recalibration_reading(records: pd.DataFrame, names: list[str], far: int, multiple: int,
                          share: float) -> tuple[str, list[str]] | None:
    """(table, sentences) for every base scheme with fine-tuned runs among ``names`` (pseudo-schemes of
    ``with_variants``), or None where none was fine-tuned. Perplexity differences in the sliding-window protocol:
    in-range cost = ppl(method, L) − ppl(baseline, L); beyond gain = ppl(baseline, far) − ppl(method, far)."""
    labels = {m.label: m for m in METHODS}
    bases = list(dict.fromkeys(n.rpartition("+")[0] for n in names if n.rpartition("+")[2] in labels))
    if not bases:
        return None
    rows, changed = [], []
    for base in bases:
        control = f"{base}+long-tuned" if f"{base}+long-tuned" in names else None
        for method in METHODS:
            tuned = f"{base}+{method.label}"
            if tuned not in names:
                continue
            zero = base if method.before is None else f"{base}+{BY_NAME[method.before].untuned_label}"
            after_base = base if method.name == "long" or control is None else control
            cost_before, _ = _cell(_differences(records, zero, base, "at_L")) if zero != base else ("0 (the run)", 0)
            cost_after, _ = _cell(_differences(records, tuned, after_base, "at_L"))
            gain_before, sign_before = _cell(_differences(records, base, zero, "at_4L")) if zero != base else \
                ("0 (the run)", 0)
            gain_after, sign_after = _cell(_differences(records, after_base, tuned, "at_4L"))
            rows.append([f"`{tuned}`", f"`{zero}`" if zero != base else "(as trained)", cost_before, gain_before,
                         f"`{after_base}`", cost_after, gain_after])
            if zero != base and sign_before != sign_after:
                changed.append(f"`{base}`'s {method.label.removesuffix('-tuned')} beyond L: "
                               f"{VERDICT[sign_before]} before, {VERDICT[sign_after]} after the fine-tune")
    table = markdown_table(["fine-tuned run", "before: the run read with its module", "in-range cost, before",
                            f"gain at {far}, before", "judged after against", "in-range cost, after",
                            f"gain at {far}, after"], rows)
    lead = (f"Each run fine-tuned at {multiple}L for {share:.0%} of its training steps with each method in place (fixed "
            f"at s = {multiple}), then scored again; before: the run as trained read with the same module "
            f"(sliding-window perplexity; mean over seeds of the paired differences, [95% t-interval]; a cost above 0 "
            f"is worse within L, a gain above 0 better at {far}).")
    sentences = [lead] + (["What the fine-tune changes: " + "; ".join(changed) + "."] if changed else
                          ["No verdict beyond L changes sign once the fine-tune is in (at 95%, where both were read)."])
    return table, sentences
