"""``alibi_sym``: symmetric ALiBi, bias −m_h·|i − j| on every head (the encoder form used by the
copy-task reference; slopes from Press et al. 2022, https://arxiv.org/abs/2108.12409).

Kept to reproduce the reference's finding: a symmetric distance cannot tell left from right, so it
fails the copy task. In a causal decoder the mask hides the right side and it equals causal ALiBi.
"""

from __future__ import annotations

import torch

from pelab.positional.base import PositionalEncoding
from pelab.positional.functional import alibi_slopes, relative_distances


class SymmetricALiBiPositionalEncoding(PositionalEncoding):
    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)  # (H,)

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = relative_distances(q_pos, k_pos).abs().float()  # (Tq, Tk)
        return -self.slopes[:, None, None] * distance[None]  # (H, Tq, Tk)
