"""The LM study's model: the shared sequence model (``pelab.model.sequence``), causal (decoder-only)."""

from __future__ import annotations

from pelab.model.config import ModelConfig
from pelab.model.sequence import SequenceTransformer, build_sequence_model


def build_lm(scheme: str, vocab_size: int, model: ModelConfig, options: object, seed: int) -> SequenceTransformer:
    return build_sequence_model(scheme, vocab_size, model, options, seed, causal=True)
