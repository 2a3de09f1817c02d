"""Batched greedy and beam search for the encoder-decoder.

Both share one step function, so beam search with one beam is exactly greedy decoding. A sentence
may produce at most ``max_len`` tokens, ``</s>`` included: ``ceil(a · source_tokens + b)``, capped by
the number of positions the model was built for; at that step ``</s>`` is forced. Decoding is
incremental: each step feeds one token per hypothesis and reuses the cached keys and values of the
earlier ones (``Seq2SeqTransformer.decode_step``; the schemes get the new token's explicit position).

Beam search (as in fairseq/GNMT, simplified): a finished hypothesis stays in its beam and may only be
extended by padding at no cost; when every beam of every sentence has finished (or hit its limit),
each sentence returns the hypothesis with the best ``log p / length ** length_penalty``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from pelab.tasks.translation.config import DecodeConfig
from pelab.tasks.translation.data import BOS_ID, EOS_ID, PAD_ID, pad_sequences
from pelab.tasks.translation.model import DecodingState, Seq2SeqTransformer
from pelab.training.loop import autocast


def _next_log_probs(
    model: Seq2SeqTransformer, tokens: torch.Tensor, state: DecodingState, finished: torch.Tensor,
    force_eos: torch.Tensor,
) -> torch.Tensor:
    """Feed the last tokens (N,); log-probabilities of the next ones (N, V). Finished rows may only add
    padding (log p = 0); rows at their length limit may only end (``</s>``)."""
    log_probs = model.decode_step(tokens, state).float().log_softmax(dim=-1)  # (N, V)
    only = torch.full_like(log_probs, float("-inf"))
    ended = only.clone()
    ended[:, PAD_ID] = 0.0
    only[:, EOS_ID] = log_probs[:, EOS_ID]
    log_probs = torch.where(force_eos[:, None], only, log_probs)
    return torch.where(finished[:, None], ended, log_probs)


@torch.no_grad()
def beam_search(
    model: Seq2SeqTransformer, src: torch.Tensor, max_len: torch.Tensor, beam_size: int, length_penalty: float = 1.0
) -> list[list[int]]:
    """src: (B, S) padded ids; max_len: (B,) token limits. Returns B token lists without ``</s>``."""
    batch, k = src.shape[0], beam_size
    memory, padding, _ = model.encode(src)
    state = model.start_decoding(memory.repeat_interleave(k, dim=0), padding.repeat_interleave(k, dim=0))  # B·K rows
    limit = max_len.to(src.device).repeat_interleave(k)  # (B·K,)
    prefix = torch.full((batch * k, 1), BOS_ID, dtype=torch.long, device=src.device)  # (B·K, 1)
    scores = torch.full((batch, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0  # all beams start identical: keep one alive
    finished = torch.zeros(batch * k, dtype=torch.bool, device=src.device)
    lengths = torch.zeros(batch * k, dtype=torch.long, device=src.device)
    offsets = torch.arange(batch, device=src.device)[:, None] * k  # (B, 1)
    for step in range(int(max_len.max())):
        log_probs = _next_log_probs(model, prefix[:, -1], state, finished, force_eos=step + 1 >= limit)
        vocab = log_probs.shape[-1]
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(batch, k * vocab)  # (B, K·V)
        scores, flat = candidates.topk(k, dim=-1)  # (B, K)
        parent = (offsets + flat // vocab).reshape(-1)  # (B·K,) row of the beam each candidate extends
        token = (flat % vocab).reshape(-1)  # (B·K,)
        prefix = torch.cat([prefix[parent], token[:, None]], dim=1)  # (B·K, t+2)
        lengths = lengths[parent] + (~finished[parent]).long()
        finished = finished[parent] | (token == EOS_ID)
        if bool(finished.all()):
            break
        state.reorder(parent)
    normalised = scores / lengths.reshape(batch, k).clamp(min=1).float() ** length_penalty  # (B, K)
    best = (offsets[:, 0] + normalised.argmax(dim=-1)).tolist()
    return [_strip(prefix[row, 1:].tolist()) for row in best]


@torch.no_grad()
def greedy_decode(model: Seq2SeqTransformer, src: torch.Tensor, max_len: torch.Tensor) -> list[list[int]]:
    """src: (B, S) padded ids; max_len: (B,) token limits. Returns B token lists without ``</s>``."""
    memory, padding, _ = model.encode(src)
    state = model.start_decoding(memory, padding)
    limit = max_len.to(src.device)
    prefix = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for step in range(int(max_len.max())):
        log_probs = _next_log_probs(model, prefix[:, -1], state, finished, force_eos=step + 1 >= limit)
        token = log_probs.argmax(dim=-1)  # (B,)
        prefix = torch.cat([prefix, token[:, None]], dim=1)
        finished = finished | (token == EOS_ID)
        if bool(finished.all()):
            break
    return [_strip(row) for row in prefix[:, 1:].tolist()]


def _strip(tokens: list[int]) -> list[int]:
    """Drop ``</s>`` and everything after it."""
    return tokens[: tokens.index(EOS_ID)] if EOS_ID in tokens else [t for t in tokens if t != PAD_ID]


def max_lengths(source_lengths: Sequence[int], cfg: DecodeConfig, max_positions: int | None) -> list[int]:
    """Per-sentence token limit ``ceil(a · |src| + b)``, capped at ``max_positions``."""
    limits = [math.ceil(cfg.max_len_a * n + cfg.max_len_b) for n in source_lengths]
    return [min(limit, max_positions) if max_positions else limit for limit in limits]


def translate(
    model: Seq2SeqTransformer,
    sources: Sequence[Sequence[int]],
    cfg: DecodeConfig,
    *,
    beam_size: int = 1,
    max_positions: int | None = None,
) -> list[list[int]]:
    """Decode every source (ids ending in ``</s>``) in batches of similar length; results in input order.

    beam_size 1 is greedy search. Sources longer than ``max_positions`` keep their first tokens and ``</s>``.
    """
    if max_positions:
        sources = [list(s) if len(s) <= max_positions else [*s[: max_positions - 1], EOS_ID] for s in sources]
    device = next(model.parameters()).device
    model.eval()
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    limits = max_lengths([len(s) for s in sources], cfg, max_positions)
    batch_size = max(1, cfg.batch_size // beam_size)
    out: list[list[int]] = [[] for _ in sources]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        src = pad_sequences([sources[i] for i in chunk]).to(device)
        limit = torch.tensor([limits[i] for i in chunk])
        with autocast(device):
            if beam_size == 1:
                hyps = greedy_decode(model, src, limit)
            else:
                hyps = beam_search(model, src, limit, beam_size, cfg.length_penalty)
        for i, hyp in zip(chunk, hyps):
            out[i] = hyp
    return out
