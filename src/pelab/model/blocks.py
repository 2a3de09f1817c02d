"""Pre-LN Transformer layers (Xiong et al. 2020, https://arxiv.org/abs/2002.04745)."""

from __future__ import annotations

import torch
from torch import nn

from pelab.model.attention import MultiHeadAttention, combine_attention_bias
from pelab.positional.base import PositionalEncoding


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    """x + SelfAttn(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, *, pe, positions, attn_bias, need_weights=False):
        h = self.attn_norm(x)
        h, weights = self.attn(h, h, pe=pe, q_pos=positions, k_pos=positions, attn_bias=attn_bias, need_weights=need_weights)
        x = x + self.drop(h)
        x = x + self.drop(self.ff(self.ff_norm(x)))
        return x, {"self": weights}


class DecoderLayer(nn.Module):
    """Causal self-attention with the decoder's scheme, then cross-attention, then FFN.

    Cross-attention gets ``cross_pe`` (the null scheme by default): queries and keys there live in
    different sequences, so rotations and relative biases have no shared origin to measure from.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.self_norm = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_norm = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(
        self, x, memory, *, pe, cross_pe, positions, memory_positions, self_bias, cross_bias, need_weights=False
    ):
        h = self.self_norm(x)
        h, self_w = self.self_attn(h, h, pe=pe, q_pos=positions, k_pos=positions, attn_bias=self_bias, need_weights=need_weights)
        x = x + self.drop(h)
        h, cross_w = self.cross_attn(
            self.cross_norm(x), memory, pe=cross_pe, q_pos=positions, k_pos=memory_positions,
            attn_bias=cross_bias, need_weights=need_weights,
        )
        x = x + self.drop(h)
        x = x + self.drop(self.ff(self.ff_norm(x)))
        return x, {"self": self_w, "cross": cross_w}


class Encoder(nn.Module):
    """A stack of encoder layers sharing one positional scheme (embed + rotate + bias)."""

    def __init__(self, pe: PositionalEncoding, n_layers: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.pe = pe
        self.layers = nn.ModuleList(EncoderLayer(pe.d_model, pe.n_heads, d_ff, dropout) for _ in range(n_layers))
        self.norm = nn.LayerNorm(pe.d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, positions, key_padding_mask=None, need_weights=False):
        """x: (B, T, D) token embeddings; positions: (T,). Returns (B, T, D) and per-layer attention."""
        x = self.drop(self.pe.embed(x, positions))
        bias = combine_attention_bias(
            self.pe.bias(positions, positions), q_len=x.shape[1], k_len=x.shape[1],
            causal=self.pe.causal, key_padding_mask=key_padding_mask, device=x.device,
        )  # (B|1, H|1, T, T) or None
        attentions = []
        for layer in self.layers:
            x, weights = layer(x, pe=self.pe, positions=positions, attn_bias=bias, need_weights=need_weights)
            attentions.append(weights)
        return self.norm(x), attentions
