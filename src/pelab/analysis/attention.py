"""Attention maps of a trained copy model on the copy-task post's example ``7 1 8 2 <copy> _ _ _ _ _``."""

from __future__ import annotations

import torch

from pelab.tasks.copy.config import CopyDataConfig as CopyTaskConfig
from pelab.tasks.copy.data import encode_examples
from pelab.tasks.copy.model import CopyTransformer

EXAMPLE_DIGITS = (7, 1, 8, 2)


def token_labels(tokens: torch.Tensor, task: CopyTaskConfig) -> list[str]:
    """Readable labels: digits, ``<copy>`` and ``_`` for padding."""
    return [str(t) if t < task.n_digits else "<copy>" if t == task.copy_token else "_" for t in tokens.tolist()]


def copy_example(task: CopyTaskConfig, digits: tuple[int, ...] = EXAMPLE_DIGITS) -> tuple[torch.Tensor, torch.Tensor]:
    """``digits <copy> _ …`` padded to the trained context: input tokens (T,) and the target row (T,)."""
    example = encode_examples([digits], task.context, task)
    return example.inputs[0], example.targets[0]


@torch.no_grad()
def attention_maps(model: CopyTransformer, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention weights of every layer and head for one input, and the model's prediction.

    tokens: (T,) -> weights (L, H, T, T) (rows: queries, summing to 1), predicted tokens (T,).
    """
    logits, attentions = model.eval()(tokens[None], need_weights=True)
    weights = torch.stack([layer["self"][0] for layer in attentions])  # (L, H, T, T)
    return weights, logits[0].argmax(-1)


def copy_alignment(weights: torch.Tensor, n_digits: int) -> torch.Tensor:
    """Mean attention that output position n+1+i puts on its source digit i, i = 0..n−1: (L, H).

    A head that implements the copy puts all its weight there (1.0); uniform attention gives 1/T.
    """
    queries = torch.arange(n_digits) + n_digits + 1
    sources = torch.arange(n_digits)
    return weights[:, :, queries, sources].mean(-1)


@torch.no_grad()
def seq2seq_attention_maps(model, src: torch.Tensor, tgt_in: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every attention of an encoder-decoder (``pelab.tasks.translation.model.Seq2SeqTransformer``) on one pair.

    src: (S,) source ids; tgt_in: (T,) decoder input ids (``<s> y``, teacher forcing). Returns
    {"encoder self": (L_enc, H, S, S), "decoder self": (L_dec, H, T, T), "cross": (L_dec, H, T, S)}.
    """
    model = model.eval()
    memory, padding, encoder = model.encode(src[None], need_weights=True)
    _, decoder = model.decode(tgt_in[None], memory, padding, need_weights=True)
    return {
        "encoder self": torch.stack([layer["self"][0] for layer in encoder]),
        "decoder self": torch.stack([layer["self"][0] for layer in decoder]),
        "cross": torch.stack([layer["cross"][0] for layer in decoder]),
    }


def local_mass(weights: torch.Tensor, width: int = 1) -> torch.Tensor:
    """Mean over queries of the attention weight on keys within ``width`` positions of the query.

    weights (..., T, T) -> (...): 1 when attention stays on the diagonal band (the C05 report's
    "mainly concentrated on the diagonal"), about (2·width + 1)/T for uniform attention.
    """
    t = weights.shape[-1]
    offsets = torch.arange(t)[None, :] - torch.arange(weights.shape[-2])[:, None]
    return (weights * (offsets.abs() <= width)).sum(-1).mean(-1)
