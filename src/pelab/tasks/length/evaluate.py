"""Length-task evaluation: token accuracy and exact match of the answer at every length 1..M.

Encoder: the answer is read at the blank positions of one pass. Decoder: the answer is generated greedily,
one token at a time after the separator, each step reading the model's own previous outputs (no teacher
forcing), so an early mistake counts as it would in use.
Rows: split ``test`` per length; ``in`` (lengths 1..N) and ``beyond`` (N+1..M) as means over their lengths,
each length weighted equally.

A ``rope`` model is also scored beyond N with two evaluation-time extensions of RoPE (no retraining), for a row
of T tokens when the longest trained row had L:
* position interpolation (Chen et al. 2023, https://arxiv.org/abs/2306.15595): positions m -> m·L/T, so every
  angle stays inside the trained range; splits ``test_pi`` / ``beyond_pi``;
* NTK-aware base scaling (bloc97 2023; Peng et al. 2023, YaRN, https://arxiv.org/abs/2309.00071, §3.2):
  base -> base·(T/L)^(d/(d−2)), d the head dimension: high frequencies kept, low ones interpolated; splits
  ``test_ntk`` / ``beyond_ntk``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import torch

from pelab.positional.rope import RotaryPositionalEncoding
from pelab.tasks.base import TaskConfig
from pelab.tasks.length.data import LengthData
from pelab.tasks.length.data.layout import encoder_rows
from pelab.tasks.length.model import LengthTransformer
from pelab.training.loop import autocast


@torch.no_grad()
def predict_encoder(model: LengthTransformer, tokens: torch.Tensor, position_scale: float = 1.0) -> torch.Tensor:
    """(B, T) rows with blank answer slots -> (B, T) argmax predictions."""
    with autocast(tokens.device):
        return model(tokens, positions=scaled_positions(tokens.shape[1], position_scale, tokens.device)).argmax(-1)


@torch.no_grad()
def generate(model: LengthTransformer, prompt: torch.Tensor, n_answer: int, position_scale: float = 1.0) -> torch.Tensor:
    """prompt (B, q+1) ending in SEP -> greedy answer (B, n_answer); one full forward per generated token."""
    tokens = prompt
    for _ in range(n_answer):
        positions = scaled_positions(tokens.shape[1], position_scale, tokens.device)
        with autocast(tokens.device):
            next_token = model(tokens, positions=positions)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        tokens = torch.cat([tokens, next_token], dim=1)
    return tokens[:, prompt.shape[1]:]


def scaled_positions(length: int, scale: float, device) -> torch.Tensor | None:
    """None (the model's own positions) at scale 1, else arange(length)·scale (position interpolation)."""
    return None if scale == 1.0 else torch.arange(length, device=device, dtype=torch.float32) * scale


@contextmanager
def rope_base(model: LengthTransformer, base: float):
    """Evaluate with RoPE's base temporarily replaced (NTK-aware scaling)."""
    pe, old = model.pe, model.pe.base
    pe.base = base
    try:
        yield
    finally:
        pe.base = old


@torch.no_grad()
def answer_scores(model: LengthTransformer, data: LengthData, sources: torch.Tensor, causal: bool,
                  device: torch.device, batch_size: int, position_scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Per example: exact match (whole answer right) and token accuracy (share of answer tokens right)."""
    exact, accuracy = [], []
    for start in range(0, len(sources), batch_size):
        question, answer = data.problem.question_answer(sources[start:start + batch_size], data.config.n_symbols)
        if causal:
            tokens, _ = encoder_rows(question, answer[:, :0], data.config.n_symbols)  # question SEP
            predicted = generate(model, tokens.to(device), answer.shape[1], position_scale).cpu()
        else:
            tokens, targets = encoder_rows(question, answer, data.config.n_symbols)
            predicted = predict_encoder(model, tokens.to(device), position_scale).cpu()
            predicted = predicted[:, targets.shape[1] - answer.shape[1]:]
        correct = predicted == answer  # (B, a)
        exact.append(correct.all(dim=1).float())
        accuracy.append(correct.float().mean(dim=1))
    return torch.cat(exact), torch.cat(accuracy)


def evaluate(cfg: TaskConfig, model: LengthTransformer, data: LengthData, device: torch.device, *,
             causal: bool, row_length: Callable[[int], int]) -> list[dict[str, Any]]:
    """``row_length(n)``: tokens in a row of input length n (the RoPE extensions scale to it)."""
    model.to(device).eval()
    rows: list[dict[str, Any]] = []
    by_range: dict[str, dict[str, list[float]]] = {}

    def record(split: str, where: str, n: int, exact: torch.Tensor, accuracy: torch.Tensor) -> None:
        for metric, values in (("exact_match", exact), ("token_accuracy", accuracy)):
            value = float(values.mean())
            rows.append({"split": split, "length": n, "metric": metric, "value": value})
            by_range.setdefault(where, {}).setdefault(metric, []).append(value)

    trained = row_length(data.config.train_max)
    rope = isinstance(model.pe, RotaryPositionalEncoding)  # plain RoPE (a randomized one is a different class)
    for n, sources in sorted(data.splits["test"].items()):
        scores = answer_scores(model, data, sources, causal, device, cfg.eval.batch_size)
        record("test", "in" if n <= data.config.train_max else "beyond", n, *scores)
        if rope and n > data.config.train_max:
            ratio = row_length(n) / trained  # > 1: how far past the trained rows
            record("test_pi", "beyond_pi", n,
                   *answer_scores(model, data, sources, causal, device, cfg.eval.batch_size, 1.0 / ratio))
            head_dim = model.pe.head_dim
            with rope_base(model, model.pe.base * ratio ** (head_dim / (head_dim - 2))):
                record("test_ntk", "beyond_ntk", n,
                       *answer_scores(model, data, sources, causal, device, cfg.eval.batch_size))
    for where, metrics in by_range.items():
        for metric, values in metrics.items():
            rows.append({"split": where, "length": "all", "metric": metric, "value": sum(values) / len(values)})
    return rows
