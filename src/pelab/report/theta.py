"""RoPE's base θ in the report: where each base stops reading, beside the two bounds for the study's head size and
lengths (``pelab.positional.rope_theta``). The LM reads it from sliding-window perplexity by length, the length
study from each task's effective length. Only schemes of the θ family (``rope`` and the ``rope_theta*`` axis: specs of ``rope`` that set its base alone)."""

from __future__ import annotations

import pandas as pd

from pelab.analysis.paired import seed_values
from pelab.positional.registry import scheme_spec
from pelab.positional.rope_theta import periodic_bound, retrieval_bound


def bases(cfg, schemes: list[str]) -> dict[str, float]:
    """{scheme: θ} for ``rope`` and the θ axis where the study has at least one of the axis (else {})."""
    rope = scheme_spec("rope")
    axis = [s for s in schemes if scheme_spec(s).cls is rope.cls and set(scheme_spec(s).defaults) == {"base"}]
    return {s: float(cfg.options(s).base) for s in schemes if s == "rope" or s in axis} if axis else {}


def bounds_text(head_dim: int, trained: int, longest: int) -> str:
    return (f"d = {head_dim}: every pair turns within the {trained} trained positions for θ ≤ "
            f"{periodic_bound(head_dim, trained):.3g} (Liu et al. 2024); reading {trained} positions needs θ ≥ "
            f"{retrieval_bound(head_dim, trained):.3g}, {longest} positions θ ≥ {retrieval_bound(head_dim, longest):.3g} "
            "(Men et al. 2024)")


def lm_theta_reading(records: pd.DataFrame, cfg, task: str, schemes: list[str], lengths: list[int],
                     flat: float) -> str:
    """"**RoPE's base θ** (bounds): sliding perplexity within 1.10× of its value at L up to T = … for θ = …"."""
    thetas = bases(cfg, schemes)
    if not thetas:
        return ""
    rows = records[(records["task"] == task) & (records["split"] == "sliding") & (records["metric"] == "ppl")
                   & (records["length"] != "all")]
    rows = rows.assign(length=rows["length"].astype(int))
    parts = []
    for scheme, base in sorted(thetas.items(), key=lambda item: item[1]):
        curve = rows[rows["pe"] == scheme].groupby("length")["value"].mean()
        if curve.empty or lengths[0] not in curve:
            continue
        reach = lengths[0]
        for length in lengths[1:]:
            if length not in curve or curve[length] > flat * curve[lengths[0]]:
                break
            reach = length
        effective = seed_values(records, task, scheme, "effective", "tokens")
        passkey = f"; passkey effective length {sum(effective) / len(effective):.0f}" if effective else ""
        parts.append(f"T = {reach} for θ = {base:g} (`{scheme}`{passkey})")
    model = cfg.model
    head_dim = model.d_model // model.n_heads
    return (f"**RoPE's base θ** ({bounds_text(head_dim, lengths[0], lengths[-1])}). The longest T to which "
            f"sliding-window perplexity (mean over seeds) stays within {flat:.2f}× of its value at L: "
            + ", ".join(parts) + ".")


def length_theta_reading(records: pd.DataFrame, cfg, task: str, schemes: list[str], trained_row: int,
                         longest_row: int) -> str:
    """"**RoPE's base θ on <task>** (bounds): effective length (mean over seeds) θ = …: …"."""
    thetas = bases(cfg, schemes)
    if not thetas:
        return ""
    parts = []
    for scheme, base in sorted(thetas.items(), key=lambda item: item[1]):
        effective = seed_values(records, task, scheme, "effective", "input_length")
        if effective:
            parts.append(f"θ = {base:g} {sum(effective) / len(effective):.1f}")
    model = cfg.model
    head_dim = model.d_model // model.n_heads
    return (f"**RoPE's base θ on {task}** ({bounds_text(head_dim, trained_row, longest_row)}; rows of up to "
            f"{trained_row} tokens in training): effective length, mean over seeds (N = {cfg.data.train_max}): "
            + ", ".join(parts) + ".") if parts else ""
