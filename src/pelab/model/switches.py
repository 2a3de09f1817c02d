"""Switches against attention dilution: changes to self-attention that compose with every positional scheme.

A scheme turns them on by naming them (``PositionalEncoding.switches``: ``rope_ssmax`` is RoPE with SSMax; the names
and references: ``positional.switched.SWITCHES``); the model builders install them into every self-attention layer
(``install``), with their parameters drawn from a stream of their own, so that a switched model shares every other initial weight with its scheme's. Cross-attention
(the translation decoder's) has none. Each acts where its reference puts it:

- ``ssmax``, Scalable-Softmax (Nakanishi 2025, https://arxiv.org/abs/2501.19399, eq. 2): the logits of a query that
  sees n keys are scaled by s·log n, s learned per layer and head (initial 0.43: the default of the unofficial
  implementation gdevos010/Scalable-Softmax, which gives it as the paper's). Applied to the queries after the scheme's rotation, as Llama 4's
  attention temperature and the paper's attention form softmax((s log n) q Kᵀ/√d) do: a scheme's logit bias is
  added unscaled. n counts the keys the masks leave the query (causal, window, padding), so it is the same in
  training and at evaluation of every row, and in a causal model it carries the query's position.
- ``sink``, a learned sink logit per head (gpt-oss, https://github.com/openai/gpt-oss, ``gpt_oss/torch/model.py``,
  ``sdpa``): one more logit in every query's softmax, with no value: the weights may sum to less than one, so a
  head can attend to nothing instead of parking its mass on a token. Initial 0.
- ``gate``, a sigmoid output gate (Qiu et al. 2025, https://arxiv.org/abs/2505.06708, G1: elementwise, per head,
  from the query's hidden state): each head's output times σ(W x + b), x the layer's normed input, before the
  output projection.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from pelab.positional.switched import check_switches

SSMAX_INIT = 0.43


class Switches(nn.Module):
    """One self-attention layer's switches (``names``, a subset of ``SWITCHES``); with none it holds no parameter
    and each method returns its input (the null object every attention module starts with)."""

    def __init__(self, d_model: int, n_heads: int, names: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.names = check_switches(names, "Switches")
        self.n_heads = n_heads
        if "ssmax" in self.names:
            self.ssmax = nn.Parameter(torch.full((n_heads,), SSMAX_INIT))
        if "sink" in self.names:
            self.sink = nn.Parameter(torch.zeros(n_heads))
        if "gate" in self.names:
            self.gate = nn.Linear(d_model, d_model)

    def query_scale(self, attn_bias: torch.Tensor | None, k_len: int) -> torch.Tensor | None:
        """SSMax's factor on each query (and so on its logits): s_h·log n_i (B|1, H, Tq|1, 1), n_i the keys query i
        may see: the finite entries of its row of ``attn_bias`` (B|1, H|1, Tq, Tk), all ``k_len`` where there is no
        bias. None without SSMax."""
        if "ssmax" not in self.names:
            return None
        s = self.ssmax[:, None, None]  # (H, 1, 1)
        if attn_bias is None:
            return (s * math.log(k_len))[None]
        log_n = torch.isfinite(attn_bias).sum(-1, keepdim=True).clamp(min=1).to(s.dtype).log()  # (B|1, H|1, Tq, 1)
        return s * log_n

    def with_sink(self, k: torch.Tensor, v: torch.Tensor, attn_bias: torch.Tensor | None, q_len: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The sink as key 0 of every row: a zero key and value, its logit the head's sink (through the bias).
        k, v (B, H, Tk, Dh) -> (B, H, 1 + Tk, Dh); attn_bias (B|1, H|1, Tq, Tk) or None -> (B|1, H, Tq, 1 + Tk)."""
        if "sink" not in self.names:
            return k, v, attn_bias
        b, h, t, _ = k.shape
        zero_k, zero_v = k.new_zeros(b, h, 1, k.shape[-1]), v.new_zeros(b, h, 1, v.shape[-1])  # PoPE's k: 2 Dh
        if attn_bias is None:
            attn_bias = k.new_zeros(1, h, q_len, t)
        rows = attn_bias.shape[0]
        sink = self.sink.to(k.dtype)[None, :, None, None].expand(rows, h, q_len, 1)
        return (torch.cat([zero_k, k], 2), torch.cat([zero_v, v], 2),
                torch.cat([sink, attn_bias.expand(rows, h, q_len, t)], -1))

    def key_weights(self, weights: torch.Tensor) -> torch.Tensor:
        """The weights (B, H, Tq, [1 +] Tk) of the real keys: the sink's column dropped."""
        return weights[..., 1:] if "sink" in self.names else weights

    def gated(self, out: torch.Tensor, x: torch.Tensor | None) -> torch.Tensor:
        """The output gate: out (B, H, Tq, Dh) times σ(W x + b), x (B, Tq, D) the layer's normed input."""
        if "gate" not in self.names or x is None:
            return out
        gate = torch.sigmoid(self.gate(x)).unflatten(-1, (self.n_heads, -1)).transpose(1, 2)  # (B, H, Tq, Dh)
        return out * gate

    def extra_repr(self) -> str:
        return ", ".join(self.names) or "none"


def install(model: nn.Module, names: tuple[str, ...], seed: int) -> None:
    """Give every self-attention module of ``model`` (``self_attention``-flagged ``MultiHeadAttention``) the switches
    ``names``, their parameters drawn from a stream of their own (``seed``), so every other weight is the unswitched
    model's."""
    if not names:
        return
    from pelab.seeding import seeded

    with seeded(seed + 2_000_003):
        for module in model.modules():
            if getattr(module, "self_attention", False):
                module.switches = Switches(module.n_heads * module.head_dim, module.n_heads, names)
