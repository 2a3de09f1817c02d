"""Copy-task evaluation: exact match and token accuracy per split and per sequence length."""

from __future__ import annotations

from typing import Any

import torch

from pelab.device import autocast
from pelab.probe import Probe
from pelab.probe.captures import Example, sequence_captures
from pelab.tasks.base import TaskConfig
from pelab.tasks.copy.config import CopyDataConfig
from pelab.tasks.copy.data import CopyData, CopySplit, encode_examples, sequences_per_length
from pelab.tasks.copy.model import CopyTransformer
from pelab.tasks.scoring import Scoring as BaseScoring

SPLITS = ("test", "test_long")
EXAMPLE_DIGITS = (7, 1, 8, 2)  # the copy-task post's example, ``7 1 8 2 <copy> _ …``: the captured row


def token_labels(tokens: torch.Tensor, task: CopyDataConfig) -> list[str]:
    """Readable labels: digits, ``<copy>`` and ``_`` for padding."""
    return [str(t) if t < task.n_digits else "<copy>" if t == task.copy_token else "_" for t in tokens.tolist()]


def example_row(task: CopyDataConfig, digits: tuple[int, ...] = EXAMPLE_DIGITS) -> tuple[torch.Tensor, torch.Tensor]:
    """``digits <copy> _ …`` padded to the trained context: input tokens (T,) and the target row (T,)."""
    example = encode_examples([digits], task.context, task)
    return example.inputs[0], example.targets[0]


def captures(cfg: TaskConfig, model: CopyTransformer) -> dict[str, Any]:
    """What the report draws (``pelab.probe.captures``): the copy-task post's example row, and every digit as
    layer 0's repeated token."""
    tokens, target = example_row(cfg.data)
    vocabulary = token_labels(torch.arange(cfg.data.vocab_size), cfg.data)
    return sequence_captures(model, Example(tokens, target, vocabulary, list(range(cfg.data.n_digits))))


@torch.no_grad()
def predict(model: CopyTransformer, split: CopySplit, batch_size: int = 512) -> torch.Tensor:
    """Greedy per-position predictions (N, T), computed on the model's device."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(split), batch_size):
        inputs = split.inputs[start : start + batch_size].to(device)
        with autocast(device):
            logits, _ = model(inputs)
        out.append(logits.argmax(-1).cpu())
    return torch.cat(out)  # (N, T)


@torch.no_grad()
def copy_metrics(predictions: torch.Tensor, split: CopySplit) -> dict[str, torch.Tensor]:
    """Per-example exact match (whole output row) and token accuracy on the copied part.

    predictions: (N, T) token ids. Returns {"exact_match": (N,), "token_accuracy": (N,)} as float.
    """
    exact = (predictions == split.targets).all(dim=1).float()
    positions = torch.arange(split.targets.shape[1])[None, :]  # (1, T)
    lengths = split.lengths[:, None]
    copied = (positions > lengths) & (positions <= 2 * lengths)  # (N, T)
    correct = ((predictions == split.targets) & copied).sum(dim=1).float()
    return {"exact_match": exact, "token_accuracy": correct / split.lengths.float()}


def evaluate(cfg: TaskConfig, model: CopyTransformer, data: CopyData,
             device: torch.device) -> list[dict[str, Any]]:
    """Rows {split, length, metric, value}: length "all" is the whole split, then one row per length."""
    model.to(device).eval()
    rows = []
    for split_name in SPLITS:
        split = data[split_name]
        per_example = copy_metrics(predict(model, split, cfg.eval.batch_size), split)
        for metric, values in per_example.items():
            rows.append({"split": split_name, "length": "all", "metric": metric, "value": float(values.mean())})
            for length in split.lengths.unique().tolist():
                chosen = split.lengths == length
                rows.append({"split": split_name, "length": int(length), "metric": metric,
                             "value": float(values[chosen].mean())})
    # what the per-length numbers average over (the report's table of sequences per length)
    for split_name in ("train", *SPLITS):
        rows += [{"split": "data", "length": length, "metric": f"sequences_{split_name}", "value": float(count)}
                 for length, count in sorted(sequences_per_length(data[split_name]).items())]
    return rows


PROBE_ROWS = 8  # rows per length that the per-run probe reads (pelab.probe)


class Scoring(BaseScoring):
    """Copy's scoring (``pelab.tasks.scoring``): accuracy at and beyond the training length, the probe, captures."""

    def probe(self, cfg: TaskConfig, data: CopyData):
        """Rows of the test split (the training length) and of the longer one, spread over sequence lengths."""
        def spread(split: str) -> torch.Tensor:
            inputs = data[split].inputs
            return inputs[torch.linspace(0, len(inputs) - 1, PROBE_ROWS).long()]

        return Probe(cfg.data.context, [spread("test"), spread("test_long")])

    def captures(self, cfg: TaskConfig, model: CopyTransformer, data: CopyData, device: torch.device):
        return captures(cfg, model)

    def evaluate(self, cfg: TaskConfig, model: CopyTransformer, data: CopyData, device: torch.device, out_dir):
        return evaluate(cfg, model, data, device)
