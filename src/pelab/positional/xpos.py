"""``xpos``: RoPE with an exponential decay per frequency (Sun et al. 2022, "A Length-Extrapolatable Transformer",
https://arxiv.org/abs/2212.10554, §3.2). Causal attention only.

Query n and key m are rotated as in RoPE and scaled per dimension pair i (Dh the head dimension):

    q_n -> ζ_i^{n/B} · R_n q_n,   k_m -> ζ_i^{−m/B} · R_m k_m,   ζ_i = (2i/Dh + γ) / (1 + γ),

so q_n·k_m = Σ_i ζ_i^{(n−m)/B} (RoPE's term i): relative, and decaying with n − m ≥ 0 (ζ_i < 1), faster for
the high-frequency pairs. γ = 0.4 and the scale base B = 512 are the paper's. For a key to the right of the query
(n < m) the factor would grow without bound, so the scheme is refused in bidirectional attention. B = ∞ is RoPE.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pelab.positional.functional import rope_angles, rope_rotate
from pelab.positional.rope import RotaryPositionalEncoding


@dataclass(frozen=True)
class XPosOptions:
    base: float = 10000.0  # RoPE's θ_i = base^(-2i/Dh)
    gamma: float = 0.4  # ζ_i = (2i/Dh + γ)/(1 + γ)
    scale_base: float = 512.0  # B: the decay per position is ζ_i^(1/B); inf gives RoPE

    def __post_init__(self) -> None:
        if not self.base > 1:
            raise ValueError(f"positional.xpos.base must be > 1, got {self.base}")
        if not self.gamma > 0 or not self.scale_base > 0:
            raise ValueError(f"positional.xpos.gamma and scale_base must be > 0, got {self.gamma}, {self.scale_base}")


class XPosPositionalEncoding(RotaryPositionalEncoding):
    Options = XPosOptions
    variants = ""  # none: HF's RoPE extensions rescale plain RoPE's angles, not xPos's decaying scale

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, base: float,
                 gamma: float, scale_base: float) -> None:
        if not causal:
            raise ValueError("scheme 'xpos' applies to causal attention only (its scale grows for keys right of the "
                             "query); use it with causal tasks, e.g. the length study's <problem>_causal")
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers, base=base)
        self.gamma, self.scale_base = gamma, scale_base

    def decay(self, positions: torch.Tensor, sign: float) -> torch.Tensor:
        """(T,) -> (T, Dh): ζ_i^{sign·t/B}, each pair's factor repeated over its two dimensions."""
        zeta = (torch.arange(0, self.head_dim, 2, dtype=torch.float32, device=positions.device) / self.head_dim
                + self.gamma) / (1 + self.gamma)  # (Dh/2,)
        power = sign * positions.float()[:, None] / self.scale_base  # (T, 1)
        return (zeta[None, :] ** power).repeat_interleave(2, dim=-1)

    def rotate(self, q, k, q_pos, k_pos):
        q = rope_rotate(q * self.decay(q_pos, 1.0).to(q.dtype), rope_angles(q_pos, self.head_dim, self.base))
        k = rope_rotate(k * self.decay(k_pos, -1.0).to(k.dtype), rope_angles(k_pos, self.head_dim, self.base))
        return q, k
