"""A sigmoid output gate (Qiu et al. 2025, https://arxiv.org/abs/2505.06708, G1: elementwise, per head, from the
query's hidden state): each head's output times σ(W x + b), x the layer's normed input, before the output
projection."""

from __future__ import annotations

import torch
from torch import nn

from pelab.model.switches.base import Switch

REFERENCE = "Qiu et al. 2025, Gated Attention for Large Language Models, https://arxiv.org/abs/2505.06708"
SAYS = "a sigmoid output gate per head and channel, from the query's hidden state"


class Gate(Switch):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads)
        self.proj = nn.Linear(d_model, d_model)

    def gated(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """out (B, H, Tq, Dh) times σ(W x + b), x (B, Tq, D)."""
        gate = torch.sigmoid(self.proj(x)).unflatten(-1, (self.n_heads, -1)).transpose(1, 2)  # (B, H, Tq, Dh)
        return out * gate


SWITCH = Gate
