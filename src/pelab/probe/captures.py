"""What the report draws from a trained sequence model, captured once per run by evaluation and saved as
``results/<task>/<scheme>/seed_<k>/probe.pt`` (``pelab.io.PROBE_FILE``), so the report reads files and runs no
model: every layer's and head's attention on one example row, the prediction, and layer 0's attention logits
from positions alone and from one token repeated. Nothing here branches on the scheme.

Layer-0 logits after TENER (Yan et al. 2019, https://arxiv.org/abs/1911.04474): a model never sees the raw
PE(t)·PE(s); positions pass through LayerNorm, W_q and W_k first, and PE(t)ᵀ W_qᵀ W_k PE(s) need not depend on
s − t alone (the report's distance-decay analysis reads both captures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from pelab.model.sequence import SequenceTransformer


@dataclass(frozen=True)
class Example:
    """One row a task shows the reader: tokens (T,), the row the model should output (T,), a readable label per
    token id of the vocabulary, and the token ids fed at every position for ``same_token_scores``."""

    tokens: torch.Tensor
    target: torch.Tensor
    vocabulary: list[str]
    same_tokens: list[int]


@torch.no_grad()
def layer0_scores(model: SequenceTransformer, length: int, tokens: torch.Tensor | None = None) -> torch.Tensor:
    """Layer-0 attention logits q_t·k_s/√Dh (no logit bias, no softmax) for one input: (H, T, T), on the CPU.

    tokens None: the positional signal alone — the scheme's ``embed`` of a zero input, as TENER's
    PE(t)ᵀW_qᵀW_k PE(s). tokens (T,): those token embeddings plus the scheme's ``embed``. Either way the input
    goes through layer 0's LayerNorm, W_q, W_k (with biases) and the scheme's ``rotate`` at the positions the
    forward pass uses, as in the forward pass.
    """
    model = model.eval()
    device = next(model.parameters()).device
    positions = model.positions(length, device)  # 0..T-1, or a randomized scheme's fixed evaluation draw
    x = (torch.zeros(1, length, model.pe.d_model, device=device) if tokens is None
         else model.embedding(tokens.to(device)[None]))  # (1, T, D)
    x = model.pe.embed(x, positions)
    layer = model.encoder.layers[0]
    h = layer.attn_norm(x)
    q, k, _ = layer.attn.project(h, h)  # (1, H, T, Dh)
    q, k = model.pe.layer(0).rotate(q, k, positions, positions)
    return (q @ k.transpose(-2, -1) / math.sqrt(layer.attn.head_dim))[0].float().cpu()  # (H, T, T)


@torch.no_grad()
def same_token_scores(model: SequenceTransformer, length: int, token_ids: list[int]) -> torch.Tensor:
    """Mean over ``token_ids`` of ``layer0_scores`` with that token at every position: (H, T, T).

    For schemes with no added vector (RoPE) this is the only meaningful way to feed layer 0."""
    return torch.stack([layer0_scores(model, length, torch.full((length,), v)) for v in token_ids]).mean(0)


@torch.no_grad()
def attention_maps(model: SequenceTransformer, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention weights of every layer and head for one row, and the model's prediction, on the CPU.

    tokens: (T,) -> weights (L, H, T, T) (rows: queries, summing to 1), predicted tokens (T,)."""
    model = model.eval()
    device = next(model.parameters()).device
    logits, attentions = model(tokens.to(device)[None], need_weights=True)
    weights = torch.stack([layer["self"][0].float() for layer in attentions])  # (L, H, T, T)
    return weights.cpu(), logits[0].argmax(-1).cpu()


def sequence_captures(model: SequenceTransformer, example: Example) -> dict[str, Any]:
    """The captures of one sequence model on ``example`` (what ``probe.pt`` holds for it)."""
    weights, predicted = attention_maps(model, example.tokens)
    length = example.tokens.shape[0]
    return {"tokens": example.tokens.cpu(), "target": example.target.cpu(), "attention": weights,
            "predicted": predicted, "labels": [example.vocabulary[int(t)] for t in example.tokens],
            "predicted_labels": [example.vocabulary[int(t)] for t in predicted],
            "layer0_positions": layer0_scores(model, length),
            "layer0_same_token": same_token_scores(model, length, example.same_tokens)}
