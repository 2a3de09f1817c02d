"""The one sequence model of pelab: tokens (B, T) -> logits (B, T, V) through an embedding, a stack of pre-LN
layers and a linear head. Bidirectional (the copy task, the length study's encoder) or causal (the length
study's decoder-only models, the language model), as the positional scheme was built (``pe.causal``).

The encoder-decoder of the translation study is the other model (``tasks/translation/model.py``)."""

from __future__ import annotations

import torch
from torch import nn

from pelab.model.blocks import Encoder
from pelab.model.config import ModelConfig
from pelab.model.embedding import TokenEmbedding
from pelab.model.switches import install as install_switches
from pelab.positional import PositionalEncoding, build_positional_encoding
from pelab.positional.randomized import RandomizedPositions
from pelab.seeding import seeded


class SequenceTransformer(nn.Module):
    def __init__(self, vocab_size: int, model: ModelConfig, pe: PositionalEncoding) -> None:
        super().__init__()
        self.embedding = TokenEmbedding(vocab_size, model.d_model)
        self.encoder = Encoder(pe, model.n_layers, model.d_ff, model.dropout)  # causal when pe.causal
        self.head = nn.Linear(model.d_model, vocab_size)

    @property
    def pe(self) -> PositionalEncoding:
        return self.encoder.pe

    @property
    def causal(self) -> bool:
        return self.pe.causal

    def positions(self, length: int, device: torch.device | str) -> torch.Tensor:
        """(length,) the positions of a row: drawn by a randomized scheme (``pelab.positional.randomized``; fresh
        in training, fixed per length at evaluation), else 0..length-1."""
        if isinstance(self.pe, RandomizedPositions):
            return self.pe.sample_positions(length, device)
        return torch.arange(length, device=device)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None,
                need_weights: bool = False,
                hidden: torch.Tensor | None = None) -> tuple[torch.Tensor, list[dict[str, torch.Tensor | None]]]:
        """tokens: (B, T); positions: (T,), default ``self.positions(T)``; hidden: (B, T) bool or None, True where
        a token is hidden from attention (no query reads its key or value, in any layer; every token keeps its
        position: recall's masked-distractor axis). Returns logits (B, T, V) and, per layer, {"self": attention
        weights (B, H, T, T)} (None unless ``need_weights``)."""
        if positions is None:
            positions = self.positions(tokens.shape[1], tokens.device)
        states, attentions = self.encoder(self.embedding(tokens), positions, key_padding_mask=hidden,
                                          need_weights=need_weights)
        return self.head(states), attentions

    def last_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, T) -> the last position's logits (B, V), ``forward(tokens)[0][:, -1]`` with the head applied to
        one position instead of T (for a vocabulary of 8k and T = 256 the head is half of a forward pass) and, in a
        causal model, the last layer to one query (``Encoder.last``)."""
        x, positions = self.embedding(tokens), self.positions(tokens.shape[1], tokens.device)
        if self.encoder.pe.causal:
            return self.head(self.encoder.last(x, positions))
        hidden, _ = self.encoder(x, positions)
        return self.head(hidden[:, -1])

    def extend(self, tokens: torch.Tensor, caches: list[dict[str, torch.Tensor]],
               positions: torch.Tensor) -> torch.Tensor:
        """Causal models, incremental: tokens (B, n) follow the tokens held in ``caches`` (one dict per layer,
        empty at first: ``new_caches``); positions (t + n,) of every token so far. Returns the new tokens' logits
        (B, n, V), equal to ``forward``'s on the whole row (``Encoder.extend``)."""
        return self.head(self.encoder.extend(self.embedding(tokens), caches, positions))

    def new_caches(self) -> list[dict[str, torch.Tensor]]:
        return [{} for _ in self.encoder.layers]

    def with_positional(self, pe: PositionalEncoding) -> SequenceTransformer:
        """The same weights read with another positional scheme (e.g. RoPE with position interpolation at
        evaluation): a new model object sharing every parameter with this one, which is left unchanged."""
        other = nn.Module.__new__(type(self))
        other.__dict__ = {**self.__dict__, "_modules": {**self._modules, "encoder": self.encoder.with_positional(pe)}}
        return other


def build_sequence_model(scheme: str, vocab_size: int, model: ModelConfig, options: object, seed: int, *,
                         causal: bool) -> SequenceTransformer:
    """Same seed -> same initial weights of every parameter the schemes share, in both layouts. The scheme's own
    parameters (learned table, T5 bias, FIRE) are drawn from a separate stream, so that adding them does not shift
    the initialisation of the rest of the model; so are the parameters of its switches (``model.switches``)."""
    with seeded(seed + 1_000_003):
        pe = build_positional_encoding(scheme, d_model=model.d_model, n_heads=model.n_heads, causal=causal,
                                       n_layers=model.n_layers, options=options)
    with seeded(seed):
        built = SequenceTransformer(vocab_size, model, pe)
    install_switches(built, pe.switches, seed)  # from a stream of their own too
    return built
