"""``alibi``: attention with linear biases (Press et al. 2022, https://arxiv.org/abs/2108.12409),
made direction-aware for a bidirectional encoder.

The paper's bias is −m_h·(i − j) for keys j ≤ i under a causal mask. In an encoder the obvious
extension −m_h·|i − j| (``alibi_sym``) is symmetric: a key 3 to the left and one 3 to the right
look the same, so the model cannot tell left from right and fails order-sensitive tasks such as
copying. Here, in the encoder, half the heads (even indices) look left — the paper's causal bias,
keys to the right masked — and half (odd indices) look right, the mirror image. Slopes are the
paper's for ``n_heads`` heads, so each direction gets a spread of steep and shallow heads.
In a causal decoder every head is the paper's causal ALiBi.
"""

from __future__ import annotations

import torch

from pelab.positional.base import PositionalEncoding
from pelab.positional.functional import alibi_slopes, relative_distances, right_looking_heads


class ALiBiPositionalEncoding(PositionalEncoding):
    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)  # (H,)
        looks_right = right_looking_heads(n_heads)[:, 0, 0] & (not causal)
        self.register_buffer("looks_right", looks_right, persistent=False)  # (H,)

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        rel = relative_distances(q_pos, k_pos).float()  # (Tq, Tk): k − q, > 0 right of the query
        signed = torch.where(self.looks_right[:, None, None], rel, -rel)  # (H, Tq, Tk), >= 0 on the watched side
        bias = -self.slopes[:, None, None] * signed
        return bias.masked_fill(signed < 0, float("-inf"))  # the other side is not visible to that head
