"""What every benchmark script shares: a wall-clock timing that waits for the GPU, the machine's name, and
writing a results file."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from pathlib import Path

import torch


def wall_s(fn: Callable[[], object], device: torch.device) -> float:
    """Seconds one call of ``fn`` takes, the GPU's queued work included (synchronised before and after)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"


def write_results(out: str | None, results: dict) -> None:
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(results, indent=2) + "\n")
