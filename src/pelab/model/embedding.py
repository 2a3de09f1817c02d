"""Token embeddings scaled by sqrt(d) (Vaswani et al. 2017, §3.4), initialised N(0, 1/d) so the
scaled vectors have unit-variance components, the same scale as a sinusoidal row (norm sqrt(d/2))."""

from __future__ import annotations

import math

import torch
from torch import nn


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))  # (V, D)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.weight[tokens] * self.scale  # (B, T, D)
