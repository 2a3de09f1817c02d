"""``fire``: Functional Interpolation for Relative positions (Li et al. 2023, https://arxiv.org/abs/2310.04418).

A learned function of the relative distance, progressively normalised by the query position (eq. 4):

    b(i, j) = f_θ( ψ(i − j) / ψ(max(L, i)) ),   ψ(x) = log(c·x + 1),

with f_θ a 2-layer MLP (1 → ``mlp_width`` → H, ReLU), c > 0 and the threshold L learned (c starts at ``init_c``,
L at ``threshold``; the paper's 0.1 and 512). Dividing by ψ(i) maps every query's distances into [0, 1], so a
longer context reuses the interpolation range seen in training instead of unseen distances.

The paper is causal (i ≥ j, positions from 0): ψ(i) is the query's farthest distance. In a bidirectional encoder
keys also lie to the right, so this keeps the sign of i − j and normalises each side by its own extent:

    x(i, j) = sign(i − j) · ψ(|i − j|) / ψ(max(L, e)),   e = i − j_min to the left, j_max − i to the right,

(j_min, j_max: the first and last key positions; j_min = 0 gives the paper's ψ(max(L, i))). x ∈ [−1, 1], left
and right stay distinguishable, and the causal case is exactly the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding


@dataclass(frozen=True)
class FIREOptions:
    mlp_width: int = 32  # hidden units of f_θ (the paper's 32)
    init_c: float = 0.1  # initial c of ψ(x) = log(c·x + 1)
    threshold: float = 512.0  # initial L: queries closer to the start than L are normalised by ψ(L)

    def __post_init__(self) -> None:
        if self.mlp_width < 1:
            raise ValueError(f"positional.fire.mlp_width must be >= 1, got {self.mlp_width}")
        if not self.init_c > 0 or not self.threshold > 0:
            raise ValueError(f"positional.fire.init_c and threshold must be > 0, got {self.init_c}, {self.threshold}")


class FIREPositionalEncoding(PositionalEncoding):
    Options = FIREOptions

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, mlp_width: int = 32,
                 init_c: float = 0.1, threshold: float = 512.0) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal)
        self.mlp = nn.Sequential(nn.Linear(1, mlp_width), nn.ReLU(), nn.Linear(mlp_width, n_heads))
        self.c = nn.Parameter(torch.tensor(float(init_c)))
        self.threshold = nn.Parameter(torch.tensor(float(threshold)))

    def psi(self, x: torch.Tensor) -> torch.Tensor:
        """ψ(x) = log(|c|·x + 1) for x ≥ 0 (|c| keeps ψ monotone whatever sign training gives c)."""
        return torch.log1p(self.c.abs() * x)

    def normalized_distance(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        """(Tq,), (Tk,) -> (Tq, Tk): sign(i − j)·ψ(|i − j|) / ψ(max(L, e)), i the query and j the key position,
        e the query's extent on the key's side (module docstring)."""
        i, j = q_pos.float()[:, None], k_pos.float()[None, :]
        distance = i - j
        threshold = self.threshold.abs()
        left = self.psi(torch.maximum(i - j.min(), threshold))  # (Tq, 1)
        right = self.psi(torch.maximum(j.max() - i, threshold))  # (Tq, 1)
        scale = torch.where(distance >= 0, left, right) + 1e-6  # (Tq, Tk)
        return torch.sign(distance) * self.psi(distance.abs()) / scale

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = self.normalized_distance(q_pos, k_pos)  # (Tq, Tk)
        return self.mlp(distance[..., None]).permute(2, 0, 1)  # (H, Tq, Tk)
