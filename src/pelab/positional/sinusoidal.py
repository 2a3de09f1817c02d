"""``sinusoidal``: fixed sin/cos table added to the embeddings (Vaswani et al. 2017, §3.5,
https://arxiv.org/abs/1706.03762). Works at any length; the table is rebuilt for the positions asked for."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pelab.positional.base import PositionalEncoding
from pelab.positional.functional import sinusoidal_table


@dataclass(frozen=True)
class SinusoidalOptions:
    base: float = 10000.0  # wavelength base: frequencies base^(-2i/d)

    def __post_init__(self) -> None:
        if not self.base > 1:
            raise ValueError(f"positional.sinusoidal.base must be > 1, got {self.base}")


class SinusoidalPositionalEncoding(PositionalEncoding):
    Options = SinusoidalOptions

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, base: float) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        if d_model % 2:
            raise ValueError(f"sinusoidal needs an even d_model, got {d_model}; choose an even model width")
        self.base = base

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        table = sinusoidal_table(positions, self.d_model, self.base)  # (T, D)
        return x + table.to(x.dtype)[None]
