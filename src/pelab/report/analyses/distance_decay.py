"""Distance decay, raw and through trained W_q, W_k (translation report, after TENER).

Distance decay: the score between position t and t + Δ as a function of Δ.

Raw, the sinusoidal dot product is Σ_k cos(Δ·w_k): symmetric in Δ, largest at Δ = 0, decaying (with
ripples) as Δ grows; RoPE with q = k = 1 gives the same sum over its head's frequencies, and RoFormer
§3.4.3 (https://arxiv.org/abs/2104.09864) bounds its scores by a relative upper bound that decays.
TENER (Yan et al. 2019, https://arxiv.org/abs/1911.04474) points out that a model never sees the raw
product: positions pass through W_q and W_k first, and PE(t)ᵀ W_qᵀ W_k PE(t+Δ) need not keep either
property (../references/translation-report-c05.md). Evaluation captures those layer-0 scores from every trained
copy model (``pelab.probe.captures.layer0_scores``); this section reads them.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.positional.functional import rope_angles, rope_rotate, sinusoidal_table
from pelab.report.analyses.invariants import diagonal_spread
from pelab.report.common import (
    over_seeds,
    sci,
    sinusoidal_base,
)
from pelab.report.context import ReportContext
from pelab.report.style import save


def offsets(max_offset: int) -> torch.Tensor:
    """Δ = −max_offset..max_offset: (2·max_offset + 1,)."""
    return torch.arange(-max_offset, max_offset + 1)


def sinusoidal_decay(dim: int, max_offset: int, base: float = 10000.0, t0: int | None = None) -> torch.Tensor:
    """PE(t0) · PE(t0 + Δ) for Δ in ``offsets(max_offset)``, from the table itself (float64).

    t0 defaults to max_offset so every t0 + Δ is a valid position; the value does not depend on t0.
    """
    t0 = max_offset if t0 is None else t0
    table = sinusoidal_table(torch.arange(t0 + max_offset + 1, dtype=torch.float64), dim, base)  # (T, d)
    return table[t0 - max_offset :] @ table[t0]


def rope_decay(head_dim: int, max_offset: int, base: float = 10000.0, t0: int | None = None) -> torch.Tensor:
    """⟨RoPE(1, t0), RoPE(1, t0 + Δ)⟩ with the all-ones query and key, float64: (2·max_offset + 1,)."""
    t0 = max_offset if t0 is None else t0
    positions = torch.arange(t0 + max_offset + 1, dtype=torch.float64)
    ones = torch.ones(positions.shape[0], head_dim, dtype=torch.float64)
    rotated = rope_rotate(ones, rope_angles(positions, head_dim, base))  # (T, Dh)
    return rotated[t0 - max_offset :] @ rotated[t0]


def rope_relative_upper_bound(head_dim: int, max_offset: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer §3.4.3: (1/(d/2)) Σ_{i=1}^{d/2} |S_i| with S_i = Σ_{j<i} e^{iΔθ_j}, for Δ in ``offsets``.

    Bounds the relative part of RoPE scores and decays (with ripples) as |Δ| grows.
    """
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (Dh/2,)
    delta = offsets(max_offset).double()[:, None]  # (2M+1, 1)
    partial = torch.polar(torch.ones_like(delta * theta), delta * theta).cumsum(dim=1)  # (2M+1, Dh/2)
    return partial.abs().mean(dim=1)


def scores_by_offset(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each head's scores s(t, t + Δ) gathered by Δ = −(T−1)..T−1 over every valid t.

    scores: (H, T, T) -> Δ (2T−1,), and mean, min, max over t, each (H, 2T−1). min = max for every Δ
    exactly when the scores depend on the offset only.
    """
    t = scores.shape[-1]
    deltas = torch.arange(-(t - 1), t)
    diagonals = [scores.diagonal(int(d), dim1=-2, dim2=-1) for d in deltas]  # each (H, T − |Δ|)
    mean = torch.stack([d.mean(-1) for d in diagonals], dim=-1)
    low = torch.stack([d.amin(-1) for d in diagonals], dim=-1)
    high = torch.stack([d.amax(-1) for d in diagonals], dim=-1)
    return deltas, mean, low, high


def relative_only_spread(scores: torch.Tensor) -> float:
    """max over heads and offsets of the spread of scores along s − t = const, relative to max |score|:
    0 when every head's scores depend on the offset only."""
    return max(float(diagonal_spread(head).max() / head.abs().max().clamp(min=1e-12)) for head in scores)


def asymmetry(curve: torch.Tensor) -> float:
    """max |f(Δ) − f(−Δ)| / max |f| for a curve over ``offsets(M)`` (odd length, Δ = 0 in the middle)."""
    return float((curve - curve.flip(-1)).abs().max() / curve.abs().max().clamp(min=1e-12))


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Distance decay, raw and through trained W_q, W_k (translation report, after TENER)", ""]
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, m, c = sinusoidal_base(ctx), ctx.copy.data.long_context, ctx.copy.data.context
    delta = offsets(m).numpy()
    sin_raw = sinusoidal_decay(d, m, base)
    rope_raw = rope_decay(h, m, base)
    bound = rope_relative_upper_bound(h, m, base)
    raw = {
        f"sinusoidal, d = {d}": {"PE(t)·PE(t+Δ)": (delta, (sin_raw / sin_raw[m]).numpy())},
        f"RoPE, head dim {h}": {"⟨R_t 1, R_(t+Δ) 1⟩": (delta, (rope_raw / rope_raw[m]).numpy()),
                               "RoFormer relative upper bound": (delta, (bound / bound[m]).numpy())},
    }
    parts = [
        "Raw, the sinusoidal score is symmetric (max |s(Δ) − s(−Δ)| / s(0) = "
        f"{sci(asymmetry(sin_raw))}) "
        f"and largest at Δ = {int(delta[sin_raw.argmax()])}; RoPE with q = k = 1 likewise "
        f"({sci(asymmetry(rope_raw))}, largest at Δ = {int(delta[rope_raw.argmax()])}), and its "
        f"RoFormer bound falls to {float(bound[-1] / bound[m]):.2f} of its Δ = 0 value at Δ = {m}."
    ]
    trained = {}
    if "sinusoidal" in ctx.schemes and ctx.captures("copy", "sinusoidal", ctx.seed) is not None:
        spreads, self_max = [], []
        for seed in ctx.seeds:
            captured = ctx.captures("copy", "sinusoidal", seed)
            if captured is None:
                continue
            scores = captured["layer0_positions"]  # (H, T, T), T = the trained context
            spreads.append(relative_only_spread(scores))
            self_max.append(float((scores.argmax(-1) == torch.arange(c)).float().mean()))
            if seed == ctx.seed:
                dd, mean, low, high = scores_by_offset(scores)
                trained[f"sinusoidal model (seed {seed}), layer 0:\nPE(t) through LayerNorm, W_q, W_k"] = \
                    (dd.numpy(), mean.numpy(), low.numpy(), high.numpy())
        parts.append(
            "Through layer 0 of the trained `sinusoidal` models (position vectors alone, as TENER's "
            f"PE(t)ᵀW_qᵀW_k PE(s)), the score is no longer a function of the offset: its spread along a fixed "
            f"Δ is {over_seeds(spreads, 2)} of the largest score, and the largest score of a query position "
            f"falls on itself in {over_seeds([100 * x for x in self_max], 0, unit='%')} of (head, position) rows "
            "(100% raw) — the projection discards both properties, as TENER says."
        )
    if "rope" in ctx.schemes and ctx.captures("copy", "rope", ctx.seed) is not None:
        spreads, peaks = [], []
        for seed in ctx.seeds:
            captured = ctx.captures("copy", "rope", seed)
            if captured is None:
                continue
            scores = captured["layer0_same_token"]  # (H, T, T): each digit at every position, mean over digits
            spreads.append(relative_only_spread(scores))
            dd, mean, low, high = scores_by_offset(scores)
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
    draw_distance_decay(raw, trained, ctx.figure("distance_decay.png"))
    return lines + [" ".join(parts), "", ctx.image("distance decay", "distance_decay.png"), ""]


def draw_distance_decay(
    raw: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]],
    trained: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    path: Path,
) -> Path:
    """Top: raw scores against Δ, normalised by the value at Δ = 0 ({panel: {curve: (Δ, y)}}).
    Bottom: layer-0 scores of trained models ({panel: (Δ, mean (H, K), min, max)}), one line per head
    (mean over t) with a band spanning the values at different t for the same Δ."""
    fig, axes = plt.subplots(2, max(len(raw), len(trained)), figsize=(11, 7.6), squeeze=False)
    for ax, (title, curves) in zip(axes[0], raw.items()):
        for name, (delta, y) in curves.items():
            ax.plot(delta, y, lw=1.4, label=name)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("offset Δ")
        ax.set_ylabel("score / score at Δ = 0")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    for ax, (title, (delta, mean, low, high)) in zip(axes[1], trained.items()):
        for head, color in zip(range(mean.shape[0]), plt.cm.tab10.colors):
            ax.plot(delta, mean[head], lw=1.3, color=color, label=f"head {head}")
            ax.fill_between(delta, low[head], high[head], color=color, alpha=0.15)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("offset Δ = s − t")
        ax.set_ylabel("q_t·k_s / √d_head")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, ncol=2)
    for ax in axes.flat[len(raw) + len(trained):]:
        ax.axis("off")
    fig.tight_layout()
    return save(fig, path)
