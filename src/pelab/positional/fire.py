"""``fire``: Functional Interpolation for Relative positions (Li et al. 2023, https://arxiv.org/abs/2310.04418).

A learned function of the relative distance, progressively normalised by the query position (eq. 4):

    b(i, j) = f_θ( ψ(i − j) / ψ(max(L, i)) ),   ψ(x) = log(c·x + 1),

with f_θ a 2-layer MLP (1 → ``mlp_width`` → H, ReLU), c > 0 and the threshold L learned (c starts at ``init_c``,
L at ``threshold``; the paper's 0.1 and 512). Dividing by ψ(i) maps every query's distances into [0, 1], so a
longer context reuses the interpolation range seen in training instead of unseen distances.

The paper is causal (i ≥ j, positions from 0): ψ(i) is the query's farthest distance. In a bidirectional encoder
keys also lie to the right, so this keeps the sign of i − j and normalises by the pair's farther position:

    x(i, j) = sign(i − j) · ψ(|i − j|) / ψ(max(L, i − j₀, j − j₀)),   j₀ the first key position,

so x ∈ [−1, 1], left and right stay distinguishable, and the causal case (j ≤ i, j₀ = 0) is exactly the paper's.
The bias of a pair depends on the pair alone: padding after the last real key cannot change it.

As in the reference code (mcleish7/arithmetic, ``cramming/architectures/embeddings.py``, class ``FIRE``), L is a
fixed initial value times a learned multiplier (1 at the start), so Adam moves it on the multiplier's scale, and
every attention layer has its own FIRE (``cramming/architectures/attention.py`` builds one per layer): f_θ, c and
L are per layer. ``per_layer: false`` shares layer 0's FIRE across the stack instead (as T5 shares its table).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage


@dataclass(frozen=True)
class FIREOptions:
    mlp_width: int = 32  # hidden units of f_θ (the paper's 32)
    init_c: float = 0.1  # initial c of ψ(x) = log(c·x + 1)
    threshold: float = 512.0  # initial L (learned through a multiplier): pairs within L of the start use ψ(L)
    per_layer: bool = True  # one FIRE per attention layer, as the reference; false: one shared by the stack

    def __post_init__(self) -> None:
        if self.mlp_width < 1:
            raise ValueError(f"positional.fire.mlp_width must be >= 1, got {self.mlp_width}")
        if not self.init_c > 0 or not self.threshold > 0:
            raise ValueError(f"positional.fire.init_c and threshold must be > 0, got {self.init_c}, {self.threshold}")


class FIRE(nn.Module):
    """One layer's FIRE bias b(i, j) = f_θ(x(i, j)) for every head (module docstring)."""

    def __init__(self, *, n_heads: int, mlp_width: int, init_c: float, threshold: float) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(1, mlp_width), nn.ReLU(), nn.Linear(mlp_width, n_heads))
        self.c = nn.Parameter(torch.tensor(float(init_c)))
        self.register_buffer("init_threshold", torch.tensor(float(threshold)))  # the reference's fixed init_L
        self.threshold_multiplier = nn.Parameter(torch.tensor(1.0))  # learned, as the reference's L_multiplier

    @property
    def threshold(self) -> torch.Tensor:
        """L = |multiplier · initial L|."""
        return (self.threshold_multiplier * self.init_threshold).abs()

    def psi(self, x: torch.Tensor) -> torch.Tensor:
        """ψ(x) = log(|c|·x + 1) for x ≥ 0 (|c| keeps ψ monotone whatever sign training gives c)."""
        return torch.log1p(self.c.abs() * x)

    def normalized_distance(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        """(Tq,), (Tk,) -> (Tq, Tk): sign(i − j)·ψ(|i − j|) / ψ(max(L, i − j₀, j − j₀)), i the query and j the key
        position, j₀ the first key's (module docstring)."""
        dtype = self.c.dtype  # the model's (float32, or float64 where a test trains in it)
        i, j = q_pos.to(dtype)[:, None], k_pos.to(dtype)[None, :]
        distance = i - j
        start = k_pos.to(dtype).min()
        extent = torch.maximum(torch.maximum(i - start, j - start), self.threshold)  # (Tq, Tk)
        return torch.sign(distance) * self.psi(distance.abs()) / (self.psi(extent) + 1e-6)

    def forward(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = self.normalized_distance(q_pos, k_pos)  # (Tq, Tk)
        return self.mlp(distance[..., None]).permute(2, 0, 1)  # (H, Tq, Tk)


class FIREPositionalEncoding(PositionalEncoding):
    """The bias slot of every layer: ``layers[l]`` is layer l's FIRE (one FIRE for all layers without per_layer)."""

    Options = FIREOptions

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, mlp_width: int,
                 init_c: float, threshold: float, per_layer: bool) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.threshold, self.per_layer = threshold, per_layer
        self.layers = nn.ModuleList(
            FIRE(n_heads=n_heads, mlp_width=mlp_width, init_c=init_c, threshold=threshold)
            for _ in range(n_layers if per_layer else 1)
        )

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        """The first layer's bias (H, Tq, Tk)."""
        return self.layers[0](q_pos, k_pos)

    def layer_biases(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> list[torch.Tensor | None]:
        return [fire(q_pos, k_pos) for fire in self.layers]

    def describe(self, usage: Usage) -> str:
        layers = ("every attention layer has its own FIRE, as in its reference code" if self.per_layer else
                  "one FIRE serves every layer (`per_layer: false`; its reference code builds one per layer)")
        if self.threshold >= usage.longest_train:
            start = (f"its threshold L starts at {self.threshold:g}, beyond every training row (at most "
                     f"{usage.longest_train} positions): every query starts normalised by the same ψ(L), so its "
                     "progressive interpolation is off unless training moves L below the row lengths")
        else:
            start = (f"its threshold L starts at {self.threshold:g}, below the longest training row "
                     f"({usage.longest_train} positions; the paper's 512 would switch its progressive interpolation "
                     "off at these lengths)")
        encoder = ("" if self.causal else
                   "; in an encoder it keeps the sign of i − j and normalises by the pair's farther position")
        return f"{layers}; {start}{encoder}."
