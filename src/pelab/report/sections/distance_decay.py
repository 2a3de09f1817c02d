"""Distance decay, raw and through trained W_q, W_k (translation report, after TENER)."""

from __future__ import annotations

import torch

from pelab.analysis import distance_decay
from pelab.report import analysis_figures as figures
from pelab.report.context import ReportContext
from pelab.report.sections._shared import (
    over_seeds,
    sci,
    sinusoidal_base,
)


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Distance decay, raw and through trained W_q, W_k (translation report, after TENER)", ""]
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, m, c = sinusoidal_base(ctx), ctx.copy.data.long_context, ctx.copy.data.context
    delta = distance_decay.offsets(m).numpy()
    sin_raw = distance_decay.sinusoidal_decay(d, m, base)
    rope_raw = distance_decay.rope_decay(h, m, base)
    bound = distance_decay.rope_relative_upper_bound(h, m, base)
    raw = {
        f"sinusoidal, d = {d}": {"PE(t)·PE(t+Δ)": (delta, (sin_raw / sin_raw[m]).numpy())},
        f"RoPE, head dim {h}": {"⟨R_t 1, R_(t+Δ) 1⟩": (delta, (rope_raw / rope_raw[m]).numpy()),
                               "RoFormer relative upper bound": (delta, (bound / bound[m]).numpy())},
    }
    parts = [
        "Raw, the sinusoidal score is symmetric (max |s(Δ) − s(−Δ)| / s(0) = "
        f"{sci(distance_decay.asymmetry(sin_raw))}) "
        f"and largest at Δ = {int(delta[sin_raw.argmax()])}; RoPE with q = k = 1 likewise "
        f"({sci(distance_decay.asymmetry(rope_raw))}, largest at Δ = {int(delta[rope_raw.argmax()])}), and its "
        f"RoFormer bound falls to {float(bound[-1] / bound[m]):.2f} of its Δ = 0 value at Δ = {m}."
    ]
    trained = {}
    if "sinusoidal" in ctx.schemes:
        spreads, self_max = [], []
        for seed in ctx.seeds:
            scores = distance_decay.layer0_scores(ctx.model("copy", "sinusoidal", seed), c)  # (H, T, T)
            spreads.append(distance_decay.relative_only_spread(scores))
            self_max.append(float((scores.argmax(-1) == torch.arange(c)).float().mean()))
            if seed == ctx.seed:
                dd, mean, low, high = distance_decay.scores_by_offset(scores)
                trained[f"sinusoidal model (seed {seed}), layer 0:\nPE(t) through LayerNorm, W_q, W_k"] = \
                    (dd.numpy(), mean.numpy(), low.numpy(), high.numpy())
        parts.append(
            "Through layer 0 of the trained `sinusoidal` models (position vectors alone, as TENER's "
            f"PE(t)ᵀW_qᵀW_k PE(s)), the score is no longer a function of the offset: its spread along a fixed "
            f"Δ is {over_seeds(spreads, 2)} of the largest score, and the largest score of a query position "
            f"falls on itself in {over_seeds([100 * x for x in self_max], 0, unit='%')} of (head, position) rows "
            "(100% raw) — the projection discards both properties, as TENER says."
        )
    if "rope" in ctx.schemes:
        token_ids = list(range(ctx.copy.data.n_digits))
        spreads, peaks = [], []
        for seed in ctx.seeds:
            scores = distance_decay.same_token_scores(ctx.model("copy", "rope", seed), c, token_ids)
            spreads.append(distance_decay.relative_only_spread(scores))
            dd, mean, low, high = distance_decay.scores_by_offset(scores)
            peaks += [int(dd[i]) for i in mean.argmax(-1)]
            if seed == ctx.seed:
                trained[f"RoPE model (seed {seed}), layer 0:\nsame digit at every position, mean over digits"] = \
                    (dd.numpy(), mean.numpy(), low.numpy(), high.numpy())
        at_zero = sum(p == 0 for p in peaks)
        elsewhere = ", ".join(str(p) for p in sorted(set(peaks) - {0}))
        parts.append(
            "Through layer 0 of the trained `rope` models (the same digit at every position, averaged over "
            f"digits) the score still depends on the offset only — spread {max(spreads):.1e} of the largest "
            f"score at most, float32 rounding — but its shape is learned: {at_zero} of {len(peaks)} heads "
            "(over seeds) peak at Δ = 0"
            + (f", the others at Δ ∈ {{{elsewhere}}}." if elsewhere else ".")
        )
    figures.distance_decay(raw, trained, ctx.figure("distance_decay.png"))
    return lines + [" ".join(parts), "", ctx.image("distance decay", "distance_decay.png"), ""]
