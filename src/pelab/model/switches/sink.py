"""A learned sink logit per head (gpt-oss, https://github.com/openai/gpt-oss, ``gpt_oss/torch/model.py``, ``sdpa``):
one more logit in every query's softmax, with no value: the weights may sum to less than one, so a head can attend to
nothing instead of parking its mass on a token. Initial 0."""

from __future__ import annotations

import torch
from torch import nn

from pelab.model.switches.base import Switch

REFERENCE = "OpenAI 2025, gpt-oss (learned attention sinks), https://github.com/openai/gpt-oss"
SAYS = "a learned sink logit per head (a key with no value: the weights may sum to less than 1)"


class Sink(Switch):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads)
        self.logit = nn.Parameter(torch.zeros(n_heads))  # (H,)

    def with_sink(self, k: torch.Tensor, v: torch.Tensor, attn_bias: torch.Tensor | None, q_len: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The sink as key 0 of every row: a zero key and value, its logit the head's sink (through the bias).
        k, v (B, H, Tk, Dh) -> (B, H, 1 + Tk, Dh); attn_bias (B|1, H|1, Tq, Tk) or None -> (B|1, H, Tq, 1 + Tk)."""
        b, h, t, _ = k.shape
        zero_k, zero_v = k.new_zeros(b, h, 1, k.shape[-1]), v.new_zeros(b, h, 1, v.shape[-1])  # PoPE's k: 2 Dh
        if attn_bias is None:
            attn_bias = k.new_zeros(1, h, q_len, t)
        rows = attn_bias.shape[0]
        sink = self.logit.to(k.dtype)[None, :, None, None].expand(rows, h, q_len, 1)
        return (torch.cat([zero_k, k], 2), torch.cat([zero_v, v], 2),
                torch.cat([sink, attn_bias.expand(rows, h, q_len, t)], -1))

    def key_weights(self, weights: torch.Tensor) -> torch.Tensor:
        return weights[..., 1:]


SWITCH = Sink
