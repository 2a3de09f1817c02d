"""What every switch against attention dilution is: a module of one self-attention layer with four hooks, each the
identity unless the switch overrides it (``pelab.model.switches`` composes a layer's switches in this order:
``normed`` on the projected heads, before the scheme's rotation; ``query_scale``, ``with_sink``, the softmax,
``key_weights``, ``gated``)."""

from __future__ import annotations

import torch
from torch import nn


class Switch(nn.Module):
    """One switch of one self-attention layer of width ``d_model`` and ``n_heads`` heads."""

    # whether ``query_scale`` reads the keys each query sees (the finite entries of its bias row): the attention then
    # passes it the keys a scheme's own logits drop too (StreamingLLM's cache)
    counts_keys = False

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads

    def normed(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The projected heads q (B, H, Tq, Dh) and k (B, H, Tk, Dh) before the scheme's rotation (QK-norm)."""
        return q, k

    def query_scale(self, seen: torch.Tensor | None, k_len: int) -> torch.Tensor | None:
        """A factor on each query (and so on its logits), (B|1, H, Tq|1, 1); ``seen`` (B|1, H|1, Tq, Tk): the masks'
        bias, −inf at the keys a query does not see, or None (it sees all ``k_len``). None: no factor."""
        return None

    def with_sink(self, k: torch.Tensor, v: torch.Tensor, attn_bias: torch.Tensor | None, q_len: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Keys, values and bias with keys of the switch's own prepended: k, v (B, H, Tk, Dh), attn_bias
        (B|1, H|1, Tq, Tk) or None."""
        return k, v, attn_bias

    def key_weights(self, weights: torch.Tensor) -> torch.Tensor:
        """The weights (B, H, Tq, Tk') of the keys before ``with_sink``: its own keys' columns dropped."""
        return weights

    def gated(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Each head's output out (B, H, Tq, Dh), x (B, Tq, D) the layer's normed input at the queries."""
        return out
