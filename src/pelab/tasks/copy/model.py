"""The encoder-only model of the copy task: tokens (B, T) -> logits (B, T, V) in one pass."""

from __future__ import annotations

import torch
from torch import nn

from pelab.model.blocks import Encoder
from pelab.model.embedding import TokenEmbedding
from pelab.positional import PositionalEncoding, build_positional_encoding
from pelab.tasks.copy.config import ModelConfig
from pelab.training.seeding import seeded


class CopyTransformer(nn.Module):
    def __init__(self, vocab_size: int, model: ModelConfig, pe: PositionalEncoding) -> None:
        super().__init__()
        self.embedding = TokenEmbedding(vocab_size, model.d_model)
        self.encoder = Encoder(pe, model.n_layers, model.d_ff, model.dropout)
        self.head = nn.Linear(model.d_model, vocab_size)

    @property
    def pe(self) -> PositionalEncoding:
        return self.encoder.pe

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None, need_weights: bool = False):
        """tokens: (B, T); positions: (T,), default arange(T). Returns logits (B, T, V) and attentions."""
        if positions is None:
            positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden, attentions = self.encoder(self.embedding(tokens), positions, need_weights=need_weights)
        return self.head(hidden), attentions


def build_copy_model(scheme: str, vocab_size: int, model: ModelConfig, options: object, seed: int) -> CopyTransformer:
    """Same seed -> same initial weights for every parameter the schemes share.

    The scheme's own parameters (learned table, T5 bias) are drawn from a separate stream so that
    adding them does not shift the initialisation of the rest of the model.
    """
    with seeded(seed + 1_000_003):
        pe = build_positional_encoding(scheme, d_model=model.d_model, n_heads=model.n_heads, causal=False,
                                       n_layers=model.n_layers, options=options)
    with seeded(seed):
        return CopyTransformer(vocab_size, model, pe)
