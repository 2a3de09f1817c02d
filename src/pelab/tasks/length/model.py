"""The models of the length study: one stack of pre-LN layers, bidirectional (encoder layout) or causal
(decoder-only layout, the positional scheme built with ``causal=True``). tokens (B, T) -> logits (B, T, V)."""

from __future__ import annotations

import torch
from torch import nn

from pelab.model.blocks import Encoder
from pelab.model.embedding import TokenEmbedding
from pelab.positional import PositionalEncoding, build_positional_encoding
from pelab.positional.randomized import RandomizedPositions
from pelab.tasks.length.config import LengthModelConfig
from pelab.training.seeding import seeded


class LengthTransformer(nn.Module):
    def __init__(self, vocab_size: int, model: LengthModelConfig, pe: PositionalEncoding) -> None:
        super().__init__()
        self.embedding = TokenEmbedding(vocab_size, model.d_model)
        self.layers = Encoder(pe, model.n_layers, model.d_ff, model.dropout)  # causal when pe.causal
        self.head = nn.Linear(model.d_model, vocab_size)

    @property
    def pe(self) -> PositionalEncoding:
        return self.layers.pe

    @property
    def causal(self) -> bool:
        return self.pe.causal

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """tokens: (B, T); positions: (T,), default arange(T), or drawn by a randomized scheme
        (``pelab.positional.randomized``). Returns logits (B, T, V)."""
        if positions is None and isinstance(self.pe, RandomizedPositions):
            positions = self.pe.sample_positions(tokens.shape[1], tokens.device)
        elif positions is None:
            positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden, _ = self.layers(self.embedding(tokens), positions)
        return self.head(hidden)

    def extend(self, tokens: torch.Tensor, caches: list[dict[str, torch.Tensor]],
               positions: torch.Tensor) -> torch.Tensor:
        """Causal layout, incremental: tokens (B, n) follow the tokens held in ``caches`` (one dict per layer,
        empty at first); positions (t + n,) of every token so far. Returns the new tokens' logits (B, n, V), equal
        to ``forward``'s on the whole row (``Encoder.extend``)."""
        return self.head(self.layers.extend(self.embedding(tokens), caches, positions))


def build_length_model(scheme: str, vocab_size: int, model: LengthModelConfig, options: object, seed: int,
                       causal: bool) -> LengthTransformer:
    """Same seed -> same initial weights of every shared parameter, for every scheme and both layouts (the
    scheme's own parameters come from a separate stream, as in the other tasks)."""
    with seeded(seed + 1_000_003):
        pe = build_positional_encoding(scheme, d_model=model.d_model, n_heads=model.n_heads, causal=causal,
                                       n_layers=model.n_layers, options=options)
    with seeded(seed):
        return LengthTransformer(vocab_size, model, pe)
