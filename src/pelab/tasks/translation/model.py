"""The encoder-decoder of the translation study, built from the copy task's blocks and PE interface.

How a positional scheme enters each of the three kinds of attention:

* **Encoder self-attention** (bidirectional): the scheme built with ``causal=False`` — every hook.
* **Decoder self-attention** (causal): a second instance built with ``causal=True`` — every hook.
  Learned tables and T5 bias tables are therefore separate for encoder and decoder (as in T5/fairseq).
* **Cross-attention**: the null scheme (``NoPositionalEncoding``) for every scheme. Queries are target
  positions and keys are source positions: two different sequences with no shared origin, so a rotation
  by (i − j) or a bias on |i − j| would measure a meaningless offset. Absolute schemes (sinusoidal,
  learned) still reach cross-attention: they were added to both embeddings, so the decoder's queries
  and the encoder's outputs carry their positions. Relative schemes (RoPE, ALiBi, T5) act on
  self-attention only — the choice of the T5 and RoFormer encoder-decoders.

Pre-LN layers; one token embedding (joint fr+en vocabulary) shared by the encoder input, the decoder
input and the output projection (three-way tying, Press & Wolf 2017, https://arxiv.org/abs/1608.05859).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pelab.model.blocks import Decoder, Encoder
from pelab.model.embedding import TokenEmbedding
from pelab.model.switches import install as install_switches
from pelab.positional import PositionalEncoding, build_positional_encoding
from pelab.positional.none import NoPositionalEncoding
from pelab.tasks.translation.config import Seq2SeqConfig
from pelab.seeding import seeded


@dataclass
class DecodingState:
    """What incremental decoding keeps between steps: per-layer key/value caches, the memory's padding
    mask and positions, and how many target tokens have been fed so far."""

    caches: list[dict[str, torch.Tensor]]
    memory_padding: torch.Tensor  # (N, S), True at padding
    memory_positions: torch.Tensor  # (S,)
    length: int = 0

    def reorder(self, index: torch.Tensor, memory: bool = True) -> None:
        """Keep rows ``index`` (N',) of every cached tensor — beam search's survivors.

        ``memory=False`` keeps the memory's keys, values and padding as they are: right when ``index`` only moves
        rows among copies of the same memory (the beams of one sentence), and it saves copying them every step
        (7% of beam search on a 2-core CPU, benchmarks/results/quick_profile.md)."""
        for cache in self.caches:
            for key, value in cache.items():
                if memory or not key.startswith("memory_"):
                    cache[key] = value[index]
        if memory:
            self.memory_padding = self.memory_padding[index]


class Seq2SeqTransformer(nn.Module):
    def __init__(
        self, vocab_size: int, model: Seq2SeqConfig, pe_encoder: PositionalEncoding, pe_decoder: PositionalEncoding,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        self.pad_id = pad_id
        self.embedding = TokenEmbedding(vocab_size, model.d_model)
        self.encoder = Encoder(pe_encoder, model.encoder_layers, model.d_ff, model.dropout)
        cross_pe = NoPositionalEncoding(d_model=model.d_model, n_heads=model.n_heads)
        self.decoder = Decoder(pe_decoder, cross_pe, model.decoder_layers, model.d_ff, model.dropout)

    def positional_modules(self) -> list[PositionalEncoding]:
        return [self.encoder.pe, self.decoder.pe]

    def check_length(self, length: int) -> None:
        for pe in self.positional_modules():
            pe.check_length(length)

    def encode(self, src: torch.Tensor, need_weights: bool = False):
        """src: (B, S) ids. Returns memory (B, S, D), its padding mask (B, S) and the attention maps."""
        padding = src == self.pad_id
        positions = torch.arange(src.shape[1], device=src.device)
        memory, attentions = self.encoder(
            self.embedding(src), positions, key_padding_mask=padding, need_weights=need_weights
        )
        return memory, padding, attentions

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, memory_padding: torch.Tensor, need_weights: bool = False):
        """tgt: (B, T) decoder input ids. Returns hidden states (B, T, D) and the attention maps."""
        positions = torch.arange(tgt.shape[1], device=tgt.device)
        memory_positions = torch.arange(memory.shape[1], device=memory.device)
        return self.decoder(
            self.embedding(tgt), memory, positions, memory_positions, memory_padding, need_weights=need_weights
        )

    def start_decoding(self, memory: torch.Tensor, memory_padding: torch.Tensor) -> DecodingState:
        """State for ``decode_step`` from the encoder's output (B, S, D) and padding mask (B, S)."""
        positions = torch.arange(memory.shape[1], device=memory.device)
        return DecodingState(self.decoder.init_cache(memory), memory_padding, positions)

    def decode_step(self, tokens: torch.Tensor, state: DecodingState) -> torch.Tensor:
        """Feed one token per row (N,) at position ``state.length``; returns next-token logits (N, V).
        Equal to ``logits(decode(prefix, ...))[:, -1]`` without recomputing the prefix."""
        hidden = self.decoder.step(
            self.embedding(tokens[:, None]), state.caches, state.length, state.memory_positions, state.memory_padding
        )  # (N, 1, D)
        state.length += 1
        return self.logits(hidden[:, 0])

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., V) through the tied embedding matrix."""
        return hidden @ self.embedding.weight.T

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Teacher forcing. src: (B, S); tgt: (B, T) decoder input. Returns logits (B, T, V)."""
        memory, padding, _ = self.encode(src)
        hidden, _ = self.decode(tgt, memory, padding)
        return self.logits(hidden)


def build_seq2seq_model(
    scheme: str, vocab_size: int, model: Seq2SeqConfig, options: object, seed: int, pad_id: int = 0
) -> Seq2SeqTransformer:
    """Same seed -> same initial weights for every parameter the schemes share.

    The schemes' own parameters (learned tables, T5 biases) come from a separate stream, as in
    ``build_copy_model``, so they do not shift the initialisation of the rest of the model.
    """
    with seeded(seed + 1_000_003):
        pe_encoder, pe_decoder = [
            build_positional_encoding(scheme, d_model=model.d_model, n_heads=model.n_heads, causal=causal,
                                      n_layers=n_layers, options=options)
            for causal, n_layers in ((False, model.encoder_layers), (True, model.decoder_layers))
        ]
    with seeded(seed):
        built = Seq2SeqTransformer(vocab_size, model, pe_encoder, pe_decoder, pad_id)
    install_switches(built, pe_encoder.switches, seed)  # both stacks' self-attention, from a stream of their own
    return built
