"""What a training run cost: parameters (with and without the position table), time, throughput, memory."""

from __future__ import annotations

import resource

import torch
from torch import nn

from pelab.device import device_name
from pelab.positional import PositionalEncoding
from pelab.training.loop import TrainResult


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Parameters with and without the positional schemes' own (nanoGPT-style fair count)."""
    total = sum(p.numel() for p in model.parameters())
    positional = sum(p.numel() for m in model.modules() if isinstance(m, PositionalEncoding) for p in m.parameters())
    return {"params_total": total, "params_positional": positional, "params_without_positional": total - positional}


def run_cost(model: nn.Module, result: TrainResult, device: torch.device) -> dict[str, float | int | str]:
    """The train_stats.json fields every study writes beside a checkpoint."""
    peak_mb = result.peak_memory_mb or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    graphs = {"cuda_graphs": 1} if result.cuda_graphs else {}  # only then: CPU runs' records stay as they were
    return {
        **graphs,
        **count_parameters(model),
        "wall_time_s": result.wall_time_s,
        "tokens_per_s": result.tokens / max(result.wall_time_s, 1e-9),
        "peak_memory_mb": peak_mb,
        "peak_memory_kind": "cuda_max_allocated" if device.type == "cuda" else "process_max_rss",
        "device": device_name(device),
        "final_loss": result.history[-1]["loss"],
    }
