"""Scalable-Softmax (Nakanishi 2025, https://arxiv.org/abs/2501.19399, eq. 2): the logits of a query that sees n keys
are scaled by s·log n, s learned per layer and head (initial 0.43: the default of the unofficial implementation
gdevos010/Scalable-Softmax, which gives it as the paper's). Applied to the queries after the scheme's rotation, as
Llama 4's attention temperature and the paper's attention form softmax((s log n) q Kᵀ/√d) do: a scheme's logit bias
is added unscaled. n counts the keys the masks leave the query (causal, window, padding), so it is the same in
training and at evaluation of every row, and in a causal model it carries the query's position."""

from __future__ import annotations

import math

import torch
from torch import nn

from pelab.model.switches.base import Switch

REFERENCE = "Nakanishi 2025, Scalable-Softmax Is Superior for Attention, https://arxiv.org/abs/2501.19399"
SAYS = "SSMax: each query's logits scaled by s·log n (n the keys it sees, s learned per layer and head, from 0.43)"
INIT = 0.43


class SSMax(Switch):
    counts_keys = True

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads)
        self.s = nn.Parameter(torch.full((n_heads,), INIT))  # (H,)

    def query_scale(self, seen: torch.Tensor | None, k_len: int) -> torch.Tensor:
        """s_h·log n_i (B|1, H, Tq|1, 1), n_i the finite entries of query i's row of ``seen``; all ``k_len`` where
        there is no bias."""
        s = self.s[:, None, None]  # (H, 1, 1)
        if seen is None:
            return (s * math.log(k_len))[None]
        log_n = torch.isfinite(seen).sum(-1, keepdim=True).clamp(min=1).to(s.dtype).log()  # (B|1, H|1, Tq, 1)
        return s * log_n


SWITCH = SSMax
