"""``alibi_offset``: the bidirectional ALiBi of the randomized-positional-encodings study (Ruoss et al. 2023,
https://arxiv.org/abs/2305.16843; their ``compute_alibi_encodings_biases``): the symmetric bias −m_h·|i − j| on
every head, plus m_h/2 for keys left of the query (j < i), an arbitrary offset that lets the model tell left
from right. Slopes from Press et al. 2022 (https://arxiv.org/abs/2108.12409).

It differs from both ``alibi`` (each head looks one way) and ``alibi_sym`` (no offset: left and right are the
same). In a causal decoder only j ≤ i remain: −m_h·(i − j) + m_h/2 off the diagonal.
"""

from __future__ import annotations

import torch

from pelab.positional.base import PositionalEncoding
from pelab.positional.functional import alibi_slopes, relative_distances


class OffsetALiBiPositionalEncoding(PositionalEncoding):
    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)  # (H,)

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        offsets = relative_distances(q_pos, k_pos)  # (Tq, Tk): k_pos − q_pos
        distance = offsets.abs().float() - 0.5 * (offsets < 0).float()  # |i − j|, less 1/2 left of the query
        return -self.slopes[:, None, None] * distance[None]  # (H, Tq, Tk)
