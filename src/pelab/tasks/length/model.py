"""The length study's models: the shared sequence model (``pelab.model.sequence``), bidirectional (encoder
layout) or causal (decoder-only layout, the positional scheme built with ``causal=True``)."""

from __future__ import annotations

from pelab.model.sequence import SequenceTransformer, build_sequence_model
from pelab.tasks.length.config import LengthModelConfig

LengthTransformer = SequenceTransformer


def build_length_model(scheme: str, vocab_size: int, model: LengthModelConfig, options: object, seed: int,
                       causal: bool) -> LengthTransformer:
    return build_sequence_model(scheme, vocab_size, model, options, seed, causal=causal)
