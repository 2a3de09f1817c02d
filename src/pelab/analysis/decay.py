"""Distance decay: the score between position t and t + Δ as a function of Δ.

Raw, the sinusoidal dot product is Σ_k cos(Δ·w_k): symmetric in Δ, largest at Δ = 0, decaying (with
ripples) as Δ grows; RoPE with q = k = 1 gives the same sum over its head's frequencies, and RoFormer
§3.4.3 (https://arxiv.org/abs/2104.09864) bounds its scores by a relative upper bound that decays.
TENER (Yan et al. 2019, https://arxiv.org/abs/1911.04474) points out that a model never sees the raw
product: positions pass through W_q and W_k first, and PE(t)ᵀ W_qᵀ W_k PE(t+Δ) need not keep either
property (../references/translation-report-c05.md).
"""

from __future__ import annotations

import torch

from pelab.analysis.invariants import diagonal_spread
from pelab.positional.functional import rope_angles, rope_rotate, sinusoidal_table


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


def self_peak_share(scores: torch.Tensor) -> float:
    """The share of (head, query t) whose largest score is at key s = t: scores (H, T, T)."""
    return float((scores.argmax(-1) == torch.arange(scores.shape[-1])).float().mean())


def peak_offsets(scores: torch.Tensor) -> list[int]:
    """Per head, the offset Δ at which its mean score over t (``scores_by_offset``) is largest: scores (H, T, T)."""
    delta, mean, _, _ = scores_by_offset(scores)
    return [int(delta[i]) for i in mean.argmax(-1)]


def asymmetry(curve: torch.Tensor) -> float:
    """max |f(Δ) − f(−Δ)| / max |f| for a curve over ``offsets(M)`` (odd length, Δ = 0 in the middle)."""
    return float((curve - curve.flip(-1)).abs().max() / curve.abs().max().clamp(min=1e-12))
