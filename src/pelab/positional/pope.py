"""``pope``: polar coordinate position embeddings (Gopalakrishnan et al. 2025, "Decoupling the 'What' and 'Where'
With Polar Coordinate Positional Embeddings", https://arxiv.org/abs/2509.10534, §3).

RoPE rotates pairs of components, so a pair's phase mixes content and position. PoPE makes each of the Dh components
of a query or key one complex number whose magnitude is content, softplus(x), and whose phase is position alone:

    q̃_tc = softplus(q_tc) e^{i t θ_c},   k̃_sc = softplus(k_sc) e^{i (s θ_c + δ_c)},   θ_c = base^{−c/Dh}, c = 0..Dh−1,

    logit_ts = Re Σ_c q̃_tc conj(k̃_sc) / √Dh = Σ_c softplus(q_tc) softplus(k_sc) cos((t − s) θ_c − δ_c) / √Dh,

with δ (H, Dh) a learned phase on the keys, zero at the start and clamped to [−2π, 0], shared by every layer — as
x-transformers' ``PolarEmbedding`` / ``apply_polar_pos_emb`` and lucidrains' PoPE-pytorch (``pope.py``); no code of
the authors is public. As there, the clamp is autograd's: δ starts on its upper bound, and a component one step
pushes above 0 reads 0 with no gradient from then on (pelab decays no positional parameter to pull it back). Queries and keys leave this hook 2·Dh wide (real and imaginary parts); attention keeps the
head's 1/√Dh (``MultiHeadAttention.attend``). Dh frequencies, not RoPE's Dh/2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pelab.positional.base import PositionalEncoding


@dataclass(frozen=True)
class PoPEOptions:
    base: float = 10000.0  # θ_c = base^(−c/Dh)

    def __post_init__(self) -> None:
        if not self.base > 1:
            raise ValueError(f"positional.pope.base must be > 1, got {self.base}")


def polar(x: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
    """x (..., T, Dh), phase broadcastable to it -> (..., T, 2·Dh): softplus(x)·[cos φ, sin φ], in float32 at least."""
    magnitude = F.softplus(x.to(phase.dtype))
    return torch.cat([magnitude * phase.cos(), magnitude * phase.sin()], dim=-1).to(x.dtype)


class PoPEPositionalEncoding(PositionalEncoding):
    Options = PoPEOptions
    source = "Gopalakrishnan et al. 2025, arXiv 2509.10534; as x-transformers PolarEmbedding, lucidrains/PoPE-pytorch"

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1,
                 base: float) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.base = base
        inverse_frequencies = base ** (-torch.arange(self.head_dim, dtype=torch.float32) / self.head_dim)  # (Dh,)
        self.register_buffer("inverse_frequencies", inverse_frequencies, persistent=False)
        self.phase_bias = nn.Parameter(torch.zeros(n_heads, self.head_dim))  # δ (H, Dh)

    def phases(self, positions: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """(T,) -> (T, Dh): t·θ_c."""
        return positions.to(dtype)[:, None] * self.inverse_frequencies.to(dtype)

    def rotate(self, q, k, q_pos, k_pos):
        dtype = torch.promote_types(q.dtype, torch.float32)  # phases in float32 at least, as the references
        delta = self.phase_bias.to(dtype).clamp(-2 * math.pi, 0.0)[:, None, :]  # (H, 1, Dh)
        return polar(q, self.phases(q_pos, dtype)), polar(k, self.phases(k_pos, dtype) + delta)  # (B, H, T, 2·Dh)
