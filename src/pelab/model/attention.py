"""Multi-head attention that calls the positional interface's rotate hook and takes a logit bias."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from pelab.model.switches import Switches
from pelab.positional.base import PositionalEncoding


def combine_attention_bias(
    position_bias: torch.Tensor | None,
    *,
    q_len: int,
    k_len: int,
    causal: bool = False,
    key_padding_mask: torch.Tensor | None = None,
    device: torch.device | None = None,
) -> torch.Tensor | None:
    """One additive float bias from the scheme's bias, a causal mask and a key padding mask.

    position_bias: (H, Tq, Tk) or None; key_padding_mask: (B, Tk), True where the key is padding.
    Returns (B or 1, H or 1, Tq, Tk) with -inf where attention is forbidden, or None if nothing applies.
    """
    bias = None if position_bias is None else position_bias[None]  # (1, H, Tq, Tk)
    if causal:
        future = torch.ones(q_len, k_len, dtype=torch.bool, device=device).triu(1)  # (Tq, Tk)
        causal_bias = torch.zeros(q_len, k_len, device=device).masked_fill(future, float("-inf"))
        bias = causal_bias[None, None] if bias is None else bias + causal_bias
    if key_padding_mask is not None:
        pad_bias = torch.zeros(key_padding_mask.shape, device=key_padding_mask.device)
        pad_bias = pad_bias.masked_fill(key_padding_mask, float("-inf"))[:, None, None, :]  # (B, 1, 1, Tk)
        bias = pad_bias if bias is None else bias + pad_bias
        # A padding query may see no key at all (a right-looking ALiBi head at trailing padding): let it see
        # every key so its softmax stays finite. Its output is never used; real queries always see themselves.
        bias = bias.masked_fill(torch.isinf(bias).all(dim=-1, keepdim=True), 0.0)
    return bias


def own_weights(pe: PositionalEncoding) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The scheme's ``attention_weights`` where it replaces the softmax (stick-breaking), else None."""
    overridden = type(pe).attention_weights is not PositionalEncoding.attention_weights
    return pe.attention_weights if overridden else None


def with_content_bias(attn_bias: torch.Tensor | None, content: torch.Tensor | None,
                      causal: bool) -> torch.Tensor | None:
    """The combined bias (B|1, H|1, Tq, Tk) plus a scheme's content bias (B, H, Tq, Tk), either may be None. In a
    bidirectional model a query the two leave no key (a right-looking head at trailing padding) sees every key, as in
    ``combine_attention_bias``; a causal scheme's content bias is finite (``PositionalEncoding.content_bias``), so
    every query keeps the keys the combined bias left it and the check, three passes over (B, H, Tq, Tk), is skipped."""
    if content is None:
        return attn_bias
    bias = content if attn_bias is None else attn_bias + content
    if causal:
        return bias
    return bias.masked_fill(torch.isinf(bias).all(dim=-1, keepdim=True), 0.0)


class MultiHeadAttention(nn.Module):
    """Self- or cross-attention. The positional scheme's ``rotate`` is applied to q and k; its
    ``bias`` arrives already combined with the masks as ``attn_bias``. Self-attention carries the switches its
    model's scheme names (``model.switches``; none by default)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, self_attention: bool = True) -> None:
        super().__init__()
        self.self_attention = self_attention
        self.switches = Switches(d_model, n_heads)  # none: no parameter, each hook the identity
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = dropout
        # False: attention as explicit matmul + softmax instead of the fused SDPA kernel. Set while the module
        # is vmapped over seeds (training.stacking): vmap has no batching rule for some fused kernels.
        self.fused = True

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)  # (B, T, D) -> (B, H, T, Dh)

    def project(self, x: torch.Tensor, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries from x (B, Tq, D), keys and values from memory (B, Tk, D), split into heads (queries and keys as the
        switches' ``normed`` leaves them: QK-norm) and not yet rotated: (B, H, Tq, Dh), (B, H, Tk, Dh), (B, H, Tk, Dh).
        What probes read (``pelab.probe``)."""
        heads = self.split_heads
        q, k = self.switches.normed(heads(self.q_proj(x)), heads(self.k_proj(memory)))
        return q, k, heads(self.v_proj(memory))

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        pe: PositionalEncoding,
        q_pos: torch.Tensor,
        k_pos: torch.Tensor,
        attn_bias: torch.Tensor | None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, Tq, D) queries; memory: (B, Tk, D) keys/values (x itself for self-attention).

        Returns the output (B, Tq, D) and, if ``need_weights``, the attention weights (B, H, Tq, Tk).
        """
        q, k, v = self.project(x, memory)
        q, k = pe.rotate(q, k, q_pos, k_pos)  # (B, H, T, Dh)
        attn_bias = with_content_bias(attn_bias, pe.content_bias(x, q, k), pe.causal)
        return self.attend(q, k, v, attn_bias, need_weights, normalise=own_weights(pe), gate_input=x,
                           logits=pe.logits(q, k, q_pos, k_pos))

    def extend(
        self, x: torch.Tensor, cache: dict[str, torch.Tensor], *, pe: PositionalEncoding, q_pos: torch.Tensor,
        attn_bias: torch.Tensor | None, k_pos: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Incremental self-attention: x (B, n, D) are new tokens at q_pos (n,) after the t tokens whose keys and
        values ``cache`` holds; theirs are appended in place, rotated once at their own positions (exact for every
        scheme whose ``rotate`` acts on q and k separately: all registered ones). attn_bias: (B|1, H|1, n, t + n)
        or None; k_pos: (t + n,) the positions of every key so far (None: 0..t + n − 1). Returns (B, n, D)."""
        q, k, v = self.project(x, x)
        q, k = pe.rotate(q, k, q_pos, q_pos)  # (B, H, n, Dh)
        cache["k"] = k if "k" not in cache else torch.cat([cache["k"], k], dim=2)  # (B, H, t + n, Dh)
        cache["v"] = v if "v" not in cache else torch.cat([cache["v"], v], dim=2)
        attn_bias = with_content_bias(attn_bias, pe.content_bias(x, q, cache["k"], cache), pe.causal)
        if k_pos is None:
            k_pos = torch.arange(cache["k"].shape[2], device=q_pos.device)
        return self.attend(q, cache["k"], cache["v"], attn_bias, normalise=own_weights(pe), gate_input=x,
                           logits=pe.logits(q, cache["k"], q_pos, k_pos))[0]

    def last_query(self, x: torch.Tensor, *, pe: PositionalEncoding, positions: torch.Tensor,
                   attn_bias: torch.Tensor | None) -> torch.Tensor:
        """Causal self-attention of the last query alone, ``forward``'s last row: x (B, T, D) every token's normed
        input (the keys' and values'); positions (T,); attn_bias (B|1, H|1, 1, T) or None, the last query's row.
        A content bias reads x whole and the one query (``PositionalEncoding.content_bias``). Returns (B, 1, D)."""
        q, k, v = self.project(x[:, -1:], x)
        q_pos = positions[-1:]
        q, k = pe.rotate(q, k, q_pos, positions)  # (B, H, 1, Dh), (B, H, T, Dh)
        attn_bias = with_content_bias(attn_bias, pe.content_bias(x, q, k), pe.causal)
        return self.attend(q, k, v, attn_bias, normalise=own_weights(pe), gate_input=x[:, -1:],
                           logits=pe.logits(q, k, q_pos, positions))[0]

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_bias: torch.Tensor | None, need_weights: bool = False,
        normalise: Callable[[torch.Tensor], torch.Tensor] | None = None, gate_input: torch.Tensor | None = None,
        logits: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention of projected (and rotated) heads. q: (B, H, Tq, Dh); k, v: (B, H, Tk, Dh). ``normalise``: logits
        -> weights in place of the softmax (``own_weights``), None for the softmax (on the fused kernel).
        ``gate_input``: the layer's normed input at the queries (B, Tq, D), which an output gate reads. ``logits``:
        the scheme's own content logits (B, H, Tq, Tk) in place of q·kᵀ/√Dh (``PositionalEncoding.logits``).

        Returns the output (B, Tq, D) after the output projection and, if ``need_weights``, the weights (B, H, Tq, Tk).
        """
        if attn_bias is not None:
            attn_bias = attn_bias.to(q.dtype)
        switches = self.switches
        seen = attn_bias  # the keys each query sees: the masks', and those the scheme's own logits drop (−inf)
        if logits is not None and switches.counts_keys:  # SSMax: StreamingLLM's cache drops keys in its logits
            dropped = torch.zeros_like(logits).masked_fill(~torch.isfinite(logits), float("-inf"))
            seen = dropped if attn_bias is None else dropped + attn_bias
        scale = switches.query_scale(seen, k.shape[-2])  # SSMax: (B|1, H, Tq, 1), or None
        if scale is not None:
            scale = scale.to(q.dtype)
            q = q * scale
            if logits is not None:  # the logits are linear in each query; a dropped key stays −inf (log 1 = 0)
                logits = torch.where(torch.isfinite(logits), logits * scale, logits)
        k, v, attn_bias = switches.with_sink(k, v, attn_bias, q.shape[-2])
        if logits is not None and logits.shape[-1] < k.shape[-2]:
            logits = F.pad(logits, (1, 0))  # the sink's key is zero: its content logit is 0 under any positions
        dropout = self.dropout if self.training else 0.0
        weights = None
        if need_weights or not self.fused or normalise is not None or logits is not None:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) if logits is None else logits  # (B, H, Tq, Tk)
            if attn_bias is not None:
                scores = scores + attn_bias
            weights = scores.softmax(dim=-1) if normalise is None else normalise(scores)
            out = F.dropout(weights, dropout, self.training) @ v  # (B, H, Tq, Dh)
        else:
            # the scale of the head, not of q's last dimension (PoPE doubles it: ``positional.pope``)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, dropout_p=dropout,
                                                 scale=1 / math.sqrt(self.head_dim))
        out = switches.gated(out, gate_input).transpose(1, 2).flatten(2)  # (B, Tq, D)
        return self.out_proj(out), switches.key_weights(weights) if need_weights else None
