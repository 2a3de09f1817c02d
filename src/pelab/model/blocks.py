"""Pre-LN Transformer layers (Xiong et al. 2020, https://arxiv.org/abs/2002.04745)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pelab.model.attention import MultiHeadAttention, combine_attention_bias
from pelab.positional.base import PositionalEncoding


def check_depth(pe: PositionalEncoding, n_layers: int) -> None:
    if pe.n_layers not in ((n_layers,) if pe.depth_specific else (1, n_layers)):
        raise ValueError(f"{type(pe).__name__} was built for {pe.n_layers} layers, the stack has {n_layers}")


def layer_biases(pe: PositionalEncoding, q_pos: torch.Tensor, k_pos: torch.Tensor, n_layers: int,
                 **mask: Any) -> list[torch.Tensor | None]:
    """Each layer's attention bias: the scheme's bias for that layer (one shared by every layer, or one per layer)
    combined with the masks (``combine_attention_bias``'s keywords)."""
    biases = [combine_attention_bias(bias, **mask) for bias in pe.layer_biases(q_pos, k_pos)]
    return biases * n_layers if len(biases) == 1 else biases


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    """x + SelfAttn(LN(x)), then x + FFN(LN(x)); where the layer's scheme has a ``mixer`` (an attention-free layer:
    ``positional.ssm``), x + Mixer(LN(x)) in place of the attention, which ``Encoder`` then drops."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, *, pe, positions, attn_bias, need_weights=False):
        h = self.attn_norm(x)
        if self.attn is None:  # the mixer reads no position, no mask: causal by its recurrence
            h, weights = pe.mixer()(h), None
        else:
            h, weights = self.attn(h, h, pe=pe, q_pos=positions, k_pos=positions, attn_bias=attn_bias,
                                   need_weights=need_weights)
        return self.ff_block(x + self.drop(h)), {"self": weights}

    def extend(self, x, cache, *, pe, q_pos, attn_bias, k_pos=None):
        """Incremental: x (B, n, D) are new tokens at q_pos (n,) after the tokens whose keys/values ``cache``
        holds (``MultiHeadAttention.extend``); attn_bias (1, H|1, n, t + n) or None; k_pos (t + n,) every key's
        position. Returns (B, n, D). A mixer keeps its state in ``cache`` (its ``run`` on the first call, ``step``
        after)."""
        if self.attn is None:
            mixer, h = pe.mixer(), self.attn_norm(x)
            if cache:
                h = mixer.step(h, cache)
            else:
                h, state = mixer.run(h)
                cache.update(state)
            return self.ff_block(x + self.drop(h))
        return self.ff_block(x + self.drop(self.attn.extend(self.attn_norm(x), cache, pe=pe, q_pos=q_pos,
                                                            attn_bias=attn_bias, k_pos=k_pos)))

    def last(self, x, *, pe, positions, attn_bias):
        """A causal stack's last layer read for its last position only (``Encoder.last``): x (B, T, D) every token,
        attn_bias (B|1, H|1, 1, T) or None the last query's row. Returns (B, 1, D), ``forward``'s last row."""
        if self.attn is None:  # a recurrence reads every token for its last one
            h = pe.mixer()(self.attn_norm(x))[:, -1:]
        else:
            h = self.attn.last_query(self.attn_norm(x), pe=pe, positions=positions, attn_bias=attn_bias)
        return self.ff_block(x[:, -1:] + self.drop(h))

    def ff_block(self, x):
        """x + FFN(LN(x)), every path's second half."""
        return x + self.drop(self.ff(self.ff_norm(x)))


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
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, self_attention=False)
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

    def step(self, x, cache, *, pe, cross_pe, position, memory_positions, self_bias, cross_bias):
        """Incremental decoding: one new target token. x: (B, 1, D); position: (1,). ``cache`` holds this layer's
        self-attention keys/values of the earlier tokens (``MultiHeadAttention.extend``) and the memory's keys/values.
        Returns (B, 1, D)."""
        cross = self.cross_attn
        h = self.self_attn.extend(self.self_norm(x), cache, pe=pe, q_pos=position, attn_bias=self_bias)
        x = x + self.drop(h)
        q = cross.split_heads(cross.q_proj(self.cross_norm(x)))  # (B, H, 1, Dh)
        q, memory_k = cross_pe.rotate(q, cache["memory_k"], position, memory_positions)
        h, _ = cross.attend(q, memory_k, cache["memory_v"], cross_bias)
        x = x + self.drop(h)
        return x + self.drop(self.ff(self.ff_norm(x)))


class Encoder(nn.Module):
    """A stack of encoder layers under one positional scheme (embed + rotate + bias); layer i rotates with
    ``pe.layer(i)`` (the scheme itself, or a layout's layer type)."""

    def __init__(self, pe: PositionalEncoding, n_layers: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        check_depth(pe, n_layers)
        self.pe = pe
        self.layers = nn.ModuleList(EncoderLayer(pe.d_model, pe.n_heads, d_ff, dropout) for _ in range(n_layers))
        for i, layer in enumerate(self.layers):  # drawn, then dropped: the weights after it are every scheme's
            if pe.layer(i).mixer() is not None:
                layer.attn = None
        self.norm = nn.LayerNorm(pe.d_model)
        self.drop = nn.Dropout(dropout)

    def with_positional(self, pe: PositionalEncoding) -> Encoder:
        """This stack's layers (shared, not copied) under another scheme of the same kind; ``self`` is unchanged."""
        if pe.causal != self.pe.causal:
            raise ValueError("with_positional: the new scheme must be built with the same causal flag")
        check_depth(pe, len(self.layers))
        other = nn.Module.__new__(type(self))
        other.__dict__ = {**self.__dict__, "_modules": {**self._modules, "pe": pe}}
        return other

    def forward(self, x, positions, key_padding_mask=None, need_weights=False):
        """x: (B, T, D) token embeddings; positions: (T,). Returns (B, T, D) and per-layer attention."""
        if key_padding_mask is not None and any(layer.attn is None for layer in self.layers):
            raise ValueError("an attention-free layer (mamba) cannot hide tokens from attention: its recurrence reads "
                             "every token (the masked-distractor form of recall is attention's)")
        x = self.drop(self.pe.embed(x, positions))
        biases = layer_biases(
            self.pe, positions, positions, len(self.layers), q_len=x.shape[1], k_len=x.shape[1],
            causal=self.pe.causal, key_padding_mask=key_padding_mask, device=x.device,
        )  # per layer: (B|1, H|1, T, T) or None
        attentions = []
        for i, (layer, bias) in enumerate(zip(self.layers, biases, strict=True)):
            x, weights = layer(x, pe=self.pe.layer(i), positions=positions, attn_bias=bias, need_weights=need_weights)
            attentions.append(weights)
        return self.norm(x), attentions

    def last(self, x, positions):
        """A causal stack read for the last position only: x (B, T, D) token embeddings, positions (T,). Returns
        (B, D), ``forward``'s last row: every layer but the last runs whole (the last one's keys and values need every
        token), the last one for one query: for two layers about half the work (what the crop-to-L baseline reads,
        one row of L tokens per scored token: ``tasks.lm.evaluate.cropped_nll``)."""
        if not self.pe.causal:
            raise ValueError("reading the last position alone needs a causal stack")
        x = self.drop(self.pe.embed(x, positions))
        t = x.shape[1]
        biases = layer_biases(self.pe, positions, positions, len(self.layers), q_len=t, k_len=t, causal=True,
                              device=x.device)  # per layer: (1, H|1, T, T)
        *below, top = self.layers
        for i, (layer, bias) in enumerate(zip(below, biases[:-1], strict=True)):
            x, _ = layer(x, pe=self.pe.layer(i), positions=positions, attn_bias=bias)
        row = None if biases[-1] is None else biases[-1][..., -1:, :]  # (1, H|1, 1, T)
        x = top.last(x, pe=self.pe.layer(len(below)), positions=positions, attn_bias=row)
        return self.norm(x[:, 0])

    def extend(self, x, caches, positions):
        """Incremental decoding for a causal stack: x (B, n, D) embeds n new tokens that follow the tokens held in
        ``caches`` (one dict per layer, empty at first, extended in place); positions (t + n,) are the positions of
        every token so far, the new ones last. Either the first call (a whole prompt, t = 0) or one token at a
        time. Returns (B, n, D), equal to ``forward``'s last n rows on the whole row."""
        n, total = x.shape[1], positions.shape[0]
        if not self.pe.causal:
            raise ValueError("incremental decoding needs a causal stack")
        if n > 1 and n != total:
            raise ValueError(f"after the first call, one token at a time; got {n} new tokens after {total - n}")
        q_pos = positions[total - n:]
        x = self.drop(self.pe.embed(x, q_pos))
        biases = layer_biases(self.pe, q_pos, positions, len(self.layers), q_len=n, k_len=total, causal=n > 1,
                              device=x.device)  # per layer: (1, H|1, n, t + n) or None
        for i, (layer, cache, bias) in enumerate(zip(self.layers, caches, biases, strict=True)):
            x = layer.extend(x, cache, pe=self.pe.layer(i), q_pos=q_pos, attn_bias=bias, k_pos=positions)
        return self.norm(x)


class Decoder(nn.Module):
    """A stack of decoder layers: causal self-attention with the decoder's scheme (embed + rotate + bias),
    cross-attention to the encoder's output with ``cross_pe``."""

    def __init__(
        self, pe: PositionalEncoding, cross_pe: PositionalEncoding, n_layers: int, d_ff: int, dropout: float
    ) -> None:
        super().__init__()
        if not pe.causal:
            raise ValueError("the decoder's positional scheme must be built with causal=True")
        if not pe.attends:
            raise ValueError(f"scheme {pe.name or type(pe).__name__!r} replaces self-attention, which the "
                             "encoder-decoder does not take: use it in the sequence model (the LM)")
        check_depth(pe, n_layers)
        check_depth(cross_pe, n_layers)
        self.pe = pe
        self.cross_pe = cross_pe
        self.layers = nn.ModuleList(DecoderLayer(pe.d_model, pe.n_heads, d_ff, dropout) for _ in range(n_layers))
        self.norm = nn.LayerNorm(pe.d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory, positions, memory_positions, memory_padding_mask=None, need_weights=False):
        """x: (B, T, D) target embeddings; memory: (B, S, D); positions: (T,); memory_positions: (S,);
        memory_padding_mask: (B, S), True at padding. Returns (B, T, D) and per-layer attention."""
        x = self.drop(self.pe.embed(x, positions))
        t, s = x.shape[1], memory.shape[1]
        n = len(self.layers)
        self_biases = layer_biases(self.pe, positions, positions, n, q_len=t, k_len=t, causal=True,
                                   device=x.device)  # per layer: (1, H|1, T, T)
        cross_biases = layer_biases(
            self.cross_pe, positions, memory_positions, n, q_len=t, k_len=s,
            key_padding_mask=memory_padding_mask, device=x.device,
        )  # per layer: (B|1, H|1, T, S) or None
        attentions = []
        for i, (layer, self_bias, cross_bias) in enumerate(zip(self.layers, self_biases, cross_biases, strict=True)):
            x, weights = layer(
                x, memory, pe=self.pe.layer(i), cross_pe=self.cross_pe.layer(i), positions=positions,
                memory_positions=memory_positions, self_bias=self_bias, cross_bias=cross_bias,
                need_weights=need_weights,
            )
            attentions.append(weights)
        return self.norm(x), attentions

    def init_cache(self, memory: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """Per-layer caches for incremental decoding, holding the memory's keys and values (B, H, S, Dh)."""
        return [{"memory_k": layer.cross_attn.split_heads(layer.cross_attn.k_proj(memory)),
                 "memory_v": layer.cross_attn.split_heads(layer.cross_attn.v_proj(memory))} for layer in self.layers]

    def step(self, x, caches, position: int, memory_positions, memory_padding_mask=None):
        """Incremental decoding: x (B, 1, D) is the embedding of the token at ``position``; earlier tokens
        are in ``caches`` (from ``init_cache``, updated in place). Returns the hidden state (B, 1, D),
        equal to ``forward``'s at that position."""
        pos = torch.tensor([position], device=x.device)
        keys = torch.arange(position + 1, device=x.device)
        x = self.drop(self.pe.embed(x, pos))
        n = len(self.layers)
        self_biases = layer_biases(self.pe, pos, keys, n, q_len=1, k_len=position + 1, device=x.device)
        cross_biases = layer_biases(
            self.cross_pe, pos, memory_positions, n, q_len=1, k_len=memory_positions.shape[0],
            key_padding_mask=memory_padding_mask, device=x.device,
        )  # per layer: (B|1, H|1, 1, S) or None
        for i, (layer, cache, self_bias, cross_bias) in enumerate(zip(self.layers, caches, self_biases, cross_biases,
                                                                      strict=True)):
            x = layer.step(x, cache, pe=self.pe.layer(i), cross_pe=self.cross_pe.layer(i), position=pos,
                           memory_positions=memory_positions, self_bias=self_bias, cross_bias=cross_bias)
        return self.norm(x)
