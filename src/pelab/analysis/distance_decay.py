"""Distance decay: the score between position t and t + Δ as a function of Δ.

Raw, the sinusoidal dot product is Σ_k cos(Δ·w_k): symmetric in Δ, largest at Δ = 0, decaying (with
ripples) as Δ grows; RoPE with q = k = 1 gives the same sum over its head's frequencies, and RoFormer
§3.4.3 (https://arxiv.org/abs/2104.09864) bounds its scores by a relative upper bound that decays.
TENER (Yan et al. 2019, https://arxiv.org/abs/1911.04474) points out that a model never sees the raw
product: positions pass through W_q and W_k first, and PE(t)ᵀ W_qᵀ W_k PE(t+Δ) need not keep either
property (../references/translation-report-c05.md). ``layer0_scores`` measures that on a trained model.
"""

from __future__ import annotations

import math

import torch

from pelab.analysis.norms import diagonal_spread
from pelab.positional.functional import rope_angles, rope_rotate, sinusoidal_table
from pelab.tasks.copy.model import CopyTransformer


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


@torch.no_grad()
def layer0_scores(model: CopyTransformer, length: int, tokens: torch.Tensor | None = None) -> torch.Tensor:
    """Layer-0 attention logits q_t·k_s/√Dh (no logit bias, no softmax) for one input: (H, T, T).

    tokens None: the positional signal alone — the scheme's ``embed`` of a zero input, as TENER's
    PE(t)ᵀW_qᵀW_k PE(s). tokens (T,): those token embeddings plus the scheme's ``embed``. Either way
    the input goes through layer 0's LayerNorm, W_q, W_k (with biases) and the scheme's ``rotate``,
    exactly as in the forward pass.
    """
    model = model.eval()
    positions = torch.arange(length)
    d_model = model.pe.d_model
    x = torch.zeros(1, length, d_model) if tokens is None else model.embedding(tokens[None])  # (1, T, D)
    x = model.pe.embed(x, positions)
    layer = model.encoder.layers[0]
    attn = layer.attn
    h = layer.attn_norm(x)
    q, k = attn._heads(attn.q_proj(h)), attn._heads(attn.k_proj(h))  # (1, H, T, Dh)
    q, k = model.pe.rotate(q, k, positions, positions)
    return (q @ k.transpose(-2, -1) / math.sqrt(attn.head_dim))[0]  # (H, T, T)


@torch.no_grad()
def same_token_scores(model: CopyTransformer, length: int, token_ids: list[int]) -> torch.Tensor:
    """Mean over ``token_ids`` of ``layer0_scores`` with that token at every position: (H, T, T).

    For schemes with no added vector (RoPE) this is the only meaningful way to feed layer 0.
    """
    return torch.stack([layer0_scores(model, length, torch.full((length,), v)) for v in token_ids]).mean(0)


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
