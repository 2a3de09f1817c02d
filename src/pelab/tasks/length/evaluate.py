"""Length-task evaluation: token accuracy and exact match of the answer at every length 1..M.

Encoder: the answer is read at the blank positions of one pass. Decoder: the answer is generated greedily,
one token at a time after the separator, each step reading the model's own previous outputs (no teacher
forcing), so an early mistake counts as it would in use.
Rows: split ``test`` per length; ``in`` (lengths 1..N) and ``beyond`` (N+1..M) as means over their lengths,
each length weighted equally.
"""

from __future__ import annotations

from typing import Any

import torch

from pelab.tasks.base import TaskConfig
from pelab.tasks.length.data import LengthData
from pelab.tasks.length.data.layout import encoder_rows
from pelab.tasks.length.model import LengthTransformer
from pelab.training.loop import autocast


@torch.no_grad()
def predict_encoder(model: LengthTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """(B, T) rows with blank answer slots -> (B, T) argmax predictions."""
    with autocast(tokens.device):
        return model(tokens).argmax(-1)


@torch.no_grad()
def generate(model: LengthTransformer, prompt: torch.Tensor, n_answer: int) -> torch.Tensor:
    """prompt (B, q+1) ending in SEP -> greedy answer (B, n_answer); one full forward per generated token."""
    tokens = prompt
    for _ in range(n_answer):
        with autocast(tokens.device):
            next_token = model(tokens)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        tokens = torch.cat([tokens, next_token], dim=1)
    return tokens[:, prompt.shape[1]:]


@torch.no_grad()
def answer_scores(model: LengthTransformer, data: LengthData, sources: torch.Tensor, causal: bool,
                  device: torch.device, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per example: exact match (whole answer right) and token accuracy (share of answer tokens right)."""
    exact, accuracy = [], []
    for start in range(0, len(sources), batch_size):
        question, answer = data.problem.question_answer(sources[start:start + batch_size], data.config.n_symbols)
        if causal:
            tokens, _ = encoder_rows(question, answer[:, :0], data.config.n_symbols)  # question SEP
            predicted = generate(model, tokens.to(device), answer.shape[1]).cpu()
        else:
            tokens, targets = encoder_rows(question, answer, data.config.n_symbols)
            predicted = predict_encoder(model, tokens.to(device)).cpu()[:, targets.shape[1] - answer.shape[1]:]
        correct = predicted == answer  # (B, a)
        exact.append(correct.all(dim=1).float())
        accuracy.append(correct.float().mean(dim=1))
    return torch.cat(exact), torch.cat(accuracy)


def evaluate(cfg: TaskConfig, model: LengthTransformer, data: LengthData, device: torch.device, *,
             causal: bool) -> list[dict[str, Any]]:
    model.to(device).eval()
    rows, by_range = [], {"in": {"exact_match": [], "token_accuracy": []},
                          "beyond": {"exact_match": [], "token_accuracy": []}}
    for n, sources in sorted(data.splits["test"].items()):
        exact, accuracy = answer_scores(model, data, sources, causal, device, cfg.eval.batch_size)
        where = "in" if n <= data.config.train_max else "beyond"
        for metric, values in (("exact_match", exact), ("token_accuracy", accuracy)):
            value = float(values.mean())
            rows.append({"split": "test", "length": n, "metric": metric, "value": value})
            by_range[where][metric].append(value)
    for where, metrics in by_range.items():
        for metric, values in metrics.items():
            if values:
                rows.append({"split": where, "length": "all", "metric": metric, "value": sum(values) / len(values)})
    return rows
