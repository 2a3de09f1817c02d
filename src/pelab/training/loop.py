"""The optimisation loop shared by every task: AdamW, linear warmup then cosine decay, gradient
clipping, bf16 autocast on CUDA, a tqdm bar and a per-step loss history."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from pelab.config import TrainConfig, check_device


class DivergedError(ValueError):
    """The training loss became NaN or infinite: the run stops and nothing downstream runs on it."""


def pick_device(requested: str = "auto") -> torch.device:
    """``auto`` (CUDA when available, else CPU) | ``cpu`` | ``cuda`` | ``cuda:N``."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device(requested)
    return torch.device(requested)


def autocast(device: torch.device):
    """bf16 autocast on CUDA; full precision on CPU (keeps CPU runs bit-reproducible)."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """LR multiplier: linear warmup to 1 over ``warmup`` steps, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW; no weight decay on biases, norms, embeddings and position tables (GPT-2 convention)."""
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embedding" not in n and ".pe." not in n]
    ids = {id(p) for p in decay}
    no_decay = [p for p in model.parameters() if id(p) not in ids]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98))


@dataclass
class TrainResult:
    history: list[dict[str, float]] = field(default_factory=list)  # {"step", "loss", "lr"}
    wall_time_s: float = 0.0  # optimisation only: time spent in ``on_log`` and ``snapshot`` is not counted
    eval_time_s: float = 0.0  # time spent in ``on_log`` and ``snapshot``
    tokens: int = 0
    peak_memory_mb: float = 0.0
    snapshots: list[tuple[int, dict[str, torch.Tensor]]] = field(default_factory=list)


def train(
    model: nn.Module,
    next_batch: Callable[[int], tuple[torch.Tensor, ...]],
    loss_fn: Callable[[nn.Module, tuple[torch.Tensor, ...]], tuple[torch.Tensor, int]],
    cfg: TrainConfig,
    device: torch.device,
    *,
    desc: str = "train",
    snapshot: Callable[[nn.Module], dict[str, torch.Tensor]] | None = None,
    on_log: Callable[[int, nn.Module], dict[str, float]] | None = None,
    on_row: Callable[[dict[str, float]], None] | None = None,
    what: str = "",
) -> TrainResult:
    """Run ``cfg.steps`` optimisation steps.

    next_batch(step) -> batch tensors (moved to ``device`` here); loss_fn(model, batch) -> (loss, n_tokens).
    snapshot(model), if given, is recorded at ``cfg.checkpoints`` evenly spaced steps (and step 0).
    on_log(step, model), if given, adds entries (e.g. validation loss) to the logged row.
    on_row(row), if given, receives each logged row as it is made (the live DVCLive log).
    A non-finite loss raises ``DivergedError`` at once, naming ``what`` (task, scheme, seed), the step and the lr.
    """
    model.to(device).train()
    optimizer = make_optimizer(model, cfg)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_cosine(s, cfg.steps, cfg.warmup_steps))
    result = TrainResult()
    snapshot_steps = set()
    if snapshot is not None and cfg.checkpoints > 0:
        snapshot_steps = {round(i * cfg.steps / cfg.checkpoints) for i in range(cfg.checkpoints + 1)}
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    running = 0.0
    bar = tqdm(range(cfg.steps), desc=desc, leave=False, mininterval=1.0)
    for step in bar:
        if step in snapshot_steps:
            tick = time.perf_counter()
            result.snapshots.append((step, snapshot(model)))
            result.eval_time_s += time.perf_counter() - tick
        batch = tuple(t.to(device, non_blocking=True) for t in next_batch(step))
        with autocast(device):
            loss, n_tokens = loss_fn(model, batch)
        value = float(loss.detach())
        if not math.isfinite(value):
            raise DivergedError(
                f"training diverged: loss {value} at step {step + 1}" + (f" ({what}" if what else " (")
                + f"{', ' if what else ''}lr {schedule.get_last_lr()[0]:g}); lower the learning rate"
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        schedule.step()
        result.tokens += int(n_tokens)
        running += value
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            count = (step % cfg.log_every) + 1
            row = {"step": step + 1, "loss": running / count, "lr": schedule.get_last_lr()[0]}
            running = 0.0
            if on_log is not None:
                tick = time.perf_counter()
                row.update(on_log(step + 1, model))
                model.train()
                result.eval_time_s += time.perf_counter() - tick
            result.history.append(row)
            if on_row is not None:
                on_row(row)
            bar.set_postfix(loss=f"{row['loss']:.4f}")
    if snapshot is not None and cfg.steps in snapshot_steps:
        tick = time.perf_counter()
        result.snapshots.append((cfg.steps, snapshot(model)))
        result.eval_time_s += time.perf_counter() - tick
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        result.peak_memory_mb = torch.cuda.max_memory_allocated(device) / 2**20
    result.wall_time_s = time.perf_counter() - start - result.eval_time_s
    return result
