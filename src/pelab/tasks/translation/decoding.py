"""Batched greedy and beam search for the encoder-decoder.

A sentence may produce at most ``max_len`` tokens, ``</s>`` included: ``ceil(a · source_tokens + b)``,
capped by the number of positions the model was built for; at that step ``</s>`` is forced. Both searches
emit at least ``min_len`` (1) tokens before ``</s>`` and never emit ``<pad>``, ``<s>`` or ``<unk>``.
Decoding is incremental: each step feeds one token per hypothesis and reuses the cached keys and values of
the earlier ones (``Seq2SeqTransformer.decode_step``; the schemes get the new token's explicit position).

Beam search follows fairseq's ``SequenceGenerator`` and HF's ``BeamSearchScorer``: each step ranks the 2K best
extensions of the K live hypotheses; those ending in ``</s>`` among the top K are set aside as finished with
the score ``log p / length ** length_penalty`` (length counts ``</s>``; an ``</s>`` ranked K+1..2K is dropped,
as both do), and the K best others stay live, so a finished hypothesis never takes a live one's slot.
A sentence stops when no live hypothesis can still beat its best finished one — log p only falls as a
hypothesis grows, so the best a live hypothesis can reach is its log p over the largest normaliser it can still
get (HF's ``early_stopping=False`` bound) — or when every hypothesis has reached the length limit. With a beam
that holds every prefix, this is exhaustive search of the normalised score (a test checks it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm

from pelab.device import autocast
from pelab.tasks.translation.config import DecodeConfig
from pelab.tasks.translation.data import BOS_ID, EOS_ID, PAD_ID, UNK_ID, pad_sequences
from pelab.tasks.translation.model import DecodingState, Seq2SeqTransformer

NEVER = (PAD_ID, BOS_ID, UNK_ID)  # tokens no search may emit


def _next_log_probs(
    model: Seq2SeqTransformer, tokens: torch.Tensor, state: DecodingState, step: int, limit: torch.Tensor,
    min_len: int,
) -> torch.Tensor:
    """Feed the last tokens (N,); log-probabilities of the next ones (N, V), with ``NEVER`` masked, ``</s>``
    masked before ``min_len`` tokens, and only ``</s>`` allowed for rows at their limit (N,)."""
    log_probs = model.decode_step(tokens, state).float().log_softmax(dim=-1)  # (N, V)
    log_probs[:, list(NEVER)] = float("-inf")
    if step < min_len:
        log_probs[:, EOS_ID] = float("-inf")
    only_eos = torch.full_like(log_probs, float("-inf"))
    only_eos[:, EOS_ID] = log_probs[:, EOS_ID].clamp(min=torch.finfo(log_probs.dtype).min)
    return torch.where((step + 1 >= limit)[:, None], only_eos, log_probs)


def _normalise(log_p: torch.Tensor, length: torch.Tensor | float, length_penalty: float) -> torch.Tensor:
    """fairseq/HF length normalisation: log p / length ** length_penalty (in float64, so that ties between
    hypotheses compare exactly as they would in Python floats)."""
    return log_p.double() / torch.as_tensor(length, dtype=torch.float64, device=log_p.device) ** length_penalty


def _best_reachable(log_p: torch.Tensor, step: int, limit: torch.Tensor, length_penalty: float) -> torch.Tensor:
    """The best normalised score live hypotheses (log p (B,), ``step + 1`` tokens so far) can still finish with:
    log p can only fall, so it is log p over the most favourable final length in [step + 2, limit] (B,)."""
    length = limit if length_penalty > 0 else torch.clamp(limit, max=step + 2)
    return _normalise(log_p, length, length_penalty)


@torch.no_grad()
def beam_search(
    model: Seq2SeqTransformer, src: torch.Tensor, max_len: torch.Tensor, beam_size: int, length_penalty: float = 1.0,
    min_len: int = 1,
) -> list[list[int]]:
    """src: (B, S) padded ids; max_len: (B,) token limits (``</s>`` included). Returns B token lists without
    ``</s>``: each sentence's finished hypothesis with the best normalised score.

    Every step is a handful of tensor operations over all sentences and beams on the model's device; the host
    reads one flag per step (whether every sentence is done)."""
    batch, k, device = src.shape[0], beam_size, src.device
    memory, padding, _ = model.encode(src)
    state = model.start_decoding(memory.repeat_interleave(k, dim=0), padding.repeat_interleave(k, dim=0))  # B·K rows
    limit = max_len.to(device)  # (B,)
    row_limit = limit.repeat_interleave(k)  # (B·K,)
    steps = int(max_len.max())
    prefix = torch.full((batch * k, 1), BOS_ID, dtype=torch.long, device=device)  # (B·K, t+1)
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: keep one alive
    best_score = torch.full((batch,), float("-inf"), dtype=torch.float64, device=device)  # best finished, normalised
    best_tokens = torch.full((batch, steps), PAD_ID, dtype=torch.long, device=device)  # its tokens, </s> excluded
    best_length = torch.zeros(batch, dtype=torch.long, device=device)
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    rows = torch.arange(batch, device=device)
    own_rows = torch.arange(batch * k, device=device).view(batch, k)
    rank = torch.arange(2 * k, device=device).expand(batch, 2 * k)
    for step in range(steps):
        log_probs = _next_log_probs(model, prefix[:, -1], state, step, row_limit, min_len)
        vocab = log_probs.shape[-1]
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(batch, k * vocab)  # (B, K·V)
        top_scores, top = candidates.topk(min(2 * k, k * vocab), dim=-1)  # (B, 2K), best first
        if top.shape[1] < 2 * k:  # a vocabulary smaller than two tokens per beam: pad the ranking
            pad = 2 * k - top.shape[1]
            top_scores = torch.cat([top_scores, top_scores.new_full((batch, pad), float("-inf"))], dim=1)
            top = torch.cat([top, top.new_zeros((batch, pad))], dim=1)
        parent_row = rows[:, None] * k + top // vocab  # (B, 2K) rows of B·K
        token = top % vocab
        alive = torch.isfinite(top_scores) & ~done[:, None]
        ends = alive & (token == EOS_ID) & (rank < k)  # finished from the top K only, as fairseq and HF
        # the best finished candidate of this step, per sentence, against the best so far
        finished = torch.where(ends, _normalise(top_scores, step + 1, length_penalty), float("-inf"))
        step_best, step_pick = finished.max(dim=1)  # (B,)
        better = step_best > best_score
        if step > 0:
            picked_row = parent_row[rows, step_pick]
            best_tokens[:, :step] = torch.where(better[:, None], prefix[picked_row, 1:], best_tokens[:, :step])
        best_length = torch.where(better, step, best_length)
        best_score = torch.where(better, step_best, best_score)
        # the K best of the others stay live, in rank order
        live = alive & (token != EOS_ID)
        order = torch.where(live, rank, rank + 2 * k).argsort(dim=1)[:, :k]  # (B, K) live ones first
        kept = live.gather(1, order)
        new_scores = torch.where(kept, top_scores.gather(1, order), float("-inf"))
        parent = torch.where(kept, parent_row.gather(1, order), own_rows)  # done or empty slots keep their row
        new_token = torch.where(kept, token.gather(1, order), PAD_ID)
        stop = ~kept[:, 0] | (best_score >= _best_reachable(new_scores[:, 0], step, limit, length_penalty))
        done = done | stop
        new_scores = torch.where(done[:, None], float("-inf"), new_scores)
        if bool(done.all()):
            break
        prefix = torch.cat([prefix[parent.reshape(-1)], new_token.reshape(-1, 1)], dim=1)
        state.reorder(parent.reshape(-1), memory=False)  # a parent is always a beam of the same sentence
        scores = new_scores
    lengths, tokens = best_length.tolist(), best_tokens.tolist()
    found = torch.isfinite(best_score).tolist()
    return [row[:n] if ok else [] for row, n, ok in zip(tokens, lengths, found)]


@torch.no_grad()
def greedy_decode(model: Seq2SeqTransformer, src: torch.Tensor, max_len: torch.Tensor) -> list[list[int]]:
    """src: (B, S) padded ids; max_len: (B,) token limits. Returns B token lists without ``</s>``."""
    memory, padding, _ = model.encode(src)
    state = model.start_decoding(memory, padding)
    limit = max_len.to(src.device)
    prefix = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for step in range(int(max_len.max())):
        log_probs = _next_log_probs(model, prefix[:, -1], state, step, limit, min_len=1)
        token = torch.where(finished, PAD_ID, log_probs.argmax(dim=-1))  # (B,): finished rows only pad
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
    desc: str | None = None,
) -> list[list[int]]:
    """Decode every source (ids ending in ``</s>``) in batches of similar length; results in input order.
    ``desc``, if given, labels a progress bar over sentences (it disappears when done).

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
    bar = tqdm(total=len(order), desc=desc, unit="sent", leave=False, mininterval=1.0, disable=desc is None)
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
        bar.update(len(chunk))
    bar.close()
    return out
