"""What a scheme says about itself to the report, asked of the scheme built from its options (no weights read, no
model run): the sentence that states its setup where it serves (``PositionalEncoding.describe``) and whether it is a
learned table of positions added to the embeddings (the one the references' analyses of a learned table draw)."""

from __future__ import annotations

from typing import Any

from torch import nn

from pelab.positional import PositionalEncoding, Usage, build_positional_encoding, describe, draws_positions


def _built_in_either_form(name: str, causal: bool, **kwargs: Any) -> PositionalEncoding:
    """The scheme built in the attention form ``causal``, or in the other where it has one form only (``xpos``:
    causal)."""
    try:
        return build_positional_encoding(name, causal=causal, **kwargs)
    except ValueError:
        return build_positional_encoding(name, causal=not causal, **kwargs)


def describe_scheme(name: str, usage: Usage, *, d_model: int, n_heads: int, causal: bool = False,
                    options: dict[str, Any] | Any | None = None, n_layers: int = 1) -> str | None:
    """The sentence scheme ``name``, built with ``options`` for a stack of ``n_layers`` (a layout's layers differ by
    depth), states about its setup where ``usage`` says it serves (``PositionalEncoding.describe``), or None."""
    return describe(_built_in_either_form(name, causal, d_model=d_model, n_heads=n_heads, options=options,
                                          n_layers=n_layers), usage)


def adds_learned_table(name: str) -> bool:
    """Whether scheme ``name`` adds a learned table of positions to the embeddings: it overrides ``embed`` and holds
    an ``nn.Embedding`` ``table`` of d_model columns, its positions not drawn at random (``learned``; not T5's table
    of bucket biases, nor ``rand_learned``)."""
    pe = _built_in_either_form(name, False, d_model=8, n_heads=2)
    table = getattr(pe, "table", None)
    return (isinstance(table, nn.Embedding) and table.embedding_dim == pe.d_model and not draws_positions(name)
            and type(pe).embed is not PositionalEncoding.embed)
