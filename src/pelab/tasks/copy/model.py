"""The copy task's model: the shared sequence model (``pelab.model.sequence``), bidirectional."""

from __future__ import annotations

from pelab.model.sequence import SequenceTransformer, build_sequence_model
from pelab.tasks.copy.config import ModelConfig

CopyTransformer = SequenceTransformer


def build_copy_model(scheme: str, vocab_size: int, model: ModelConfig, options: object, seed: int) -> CopyTransformer:
    return build_sequence_model(scheme, vocab_size, model, options, seed, causal=False)
