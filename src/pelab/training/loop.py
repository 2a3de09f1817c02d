"""The optimisation loop shared by every task: AdamW, linear warmup then cosine decay, gradient
clipping, mixed precision on CUDA, a tqdm bar and a per-step loss history.

Device policy (``prepare_device``, ``autocast``, ``make_optimizer``): on CUDA, TF32 matmuls, bf16 autocast where
the GPU computes bf16 natively (Ampere and later), else fp16 autocast with a gradient scaler, and
pinned host batches. On the CPU everything stays fp32, so CPU runs are bit-reproducible. AdamW is fused on
both (``adamw``).
"""

from __future__ import annotations

import math
import os
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


def prepare_device(device: torch.device) -> None:
    """Process-wide settings for ``device``: TF32 matmuls and convolutions on CUDA (the fp32 parts of mixed
    precision run on tensor cores; PyTorch's default keeps them in full fp32), and the cuBLAS workspace that
    deterministic algorithms need. Nothing changes for the CPU."""
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def use_deterministic_algorithms() -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)`` without the import of ``torch._inductor`` that
    the public function makes to set inductor's own flag (about 2 s per process with torch 2.13, i.e. per
    training stage; training never compiles). Falls back to the public function where the private one is gone."""
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None:
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        set_flag(True, warn_only=True)


def amp_dtype(device: torch.device) -> torch.dtype | None:
    """The autocast dtype for ``device``: bf16 where the GPU supports it natively, fp16 on older GPUs (which
    then needs a gradient scaler), None (full fp32) on the CPU."""
    if device.type != "cuda":
        return None
    try:
        native = torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # torch < 2.4: no emulation to rule out
        native = torch.cuda.is_bf16_supported()
    return torch.bfloat16 if native else torch.float16


def autocast(device: torch.device):
    """Mixed precision per ``amp_dtype``; a no-op on the CPU (keeps CPU runs bit-reproducible)."""
    dtype = amp_dtype(device)
    return torch.autocast(device_type=device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def grad_scaler(device: torch.device) -> torch.amp.GradScaler:
    """A loss scaler, enabled only for fp16 autocast (bf16 has fp32's exponent range and needs none)."""
    return torch.amp.GradScaler(device.type, enabled=amp_dtype(device) == torch.float16)


def to_device(tensors: tuple[torch.Tensor, ...], device: torch.device) -> tuple[torch.Tensor, ...]:
    """Move a batch to ``device``; on CUDA through pinned host memory so that the copy is asynchronous."""
    if device.type == "cuda":
        return tuple(t.pin_memory().to(device, non_blocking=True) for t in tensors)
    return tuple(t.to(device) for t in tensors)


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """LR multiplier: linear warmup to 1 over ``warmup`` steps, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def decays(name: str, param: torch.Tensor, stacked: bool = False) -> bool:
    """Whether AdamW decays this parameter: matrices only, never embeddings or position tables (GPT-2
    convention). ``stacked``: the parameter carries a leading seed dimension (``training.vectorised``)."""
    return param.ndim - int(stacked) >= 2 and "embedding" not in name and ".pe." not in name


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW; no weight decay on biases, norms, embeddings and position tables."""
    named = list(model.named_parameters())
    return adamw([p for n, p in named if decays(n, p)], [p for n, p in named if not decays(n, p)], cfg)


def adamw(decay: list[torch.Tensor], no_decay: list[torch.Tensor], cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW, betas (0.9, 0.98). The fused kernel (one pass over every parameter) wherever torch has it for the
    parameters' device - CUDA, and the CPU since torch 2.4, where it took 0-6% off a quick-size step (measured
    side by side, benchmarks/results/quick_profile.md) - else the foreach one: the same update rule."""
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), fused=True)
    except RuntimeError:  # no fused kernel for this device in this torch
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98))


@dataclass
class TrainResult:
    history: list[dict[str, float]] = field(default_factory=list)  # {"step", "loss", "lr"}
    wall_time_s: float = 0.0  # optimisation only: time spent in ``on_log`` and ``snapshot`` is not counted
    eval_time_s: float = 0.0  # time spent in ``on_log`` and ``snapshot``
    tokens: int = 0
    peak_memory_mb: float = 0.0
    snapshots: list[tuple[int, dict[str, torch.Tensor]]] = field(default_factory=list)


def lr_schedule(optimizer: torch.optim.Optimizer, cfg: TrainConfig) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_cosine(s, cfg.steps, cfg.warmup_steps))


def snapshot_schedule(cfg: TrainConfig) -> set[int]:
    """The steps at which position parameters are snapshotted: ``cfg.checkpoints`` even intervals and step 0."""
    if cfg.checkpoints <= 0:
        return set()
    return {round(i * cfg.steps / cfg.checkpoints) for i in range(cfg.checkpoints + 1)}


def is_log_step(step: int, cfg: TrainConfig) -> bool:
    return (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps


class LossWindow:
    """The training losses since the last logged row, kept on the device: reading a loss forces a host sync,
    so on CUDA they are read once per logged row. On the CPU every loss is checked as it comes.

    Losses are 0-d (one run) or (S,) (``training.vectorised``: one per seed)."""

    def __init__(self, what: str | list[str], check_every_step: bool) -> None:
        self.what, self.check_every_step = what, check_every_step
        self.losses: list[torch.Tensor] = []
        self.steps: list[int] = []
        self.lrs: list[float] = []

    def add(self, step: int, loss: torch.Tensor, lr: float) -> None:
        self.losses.append(loss.float())
        self.steps.append(step)
        self.lrs.append(lr)
        if self.check_every_step and not bool(torch.isfinite(loss).all()):
            self._values()  # raises, naming the seed

    def _values(self) -> torch.Tensor:
        """(n, S) losses of the window; raises ``DivergedError`` at the first non-finite one."""
        values = torch.stack(self.losses).reshape(len(self.losses), -1).cpu()
        bad = ~torch.isfinite(values)
        if bool(bad.any()):
            row, seed = (int(i) for i in bad.nonzero()[0])
            what = self.what[seed] if isinstance(self.what, list) else self.what
            raise DivergedError(
                f"training diverged: loss {float(values[row, seed])} at step {self.steps[row] + 1}"
                + (f" ({what}" if what else " (") + f"{', ' if what else ''}lr {self.lrs[row]:g}); "
                "lower the learning rate"
            )
        return values

    def mean(self) -> list[float]:
        """Per-seed mean loss over the window, which then starts again."""
        means = self._values().mean(dim=0).tolist()
        self.losses, self.steps, self.lrs = [], [], []
        return means


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

    next_batch(step) -> batch tensors (moved to ``device`` here); loss_fn(model, batch) -> (loss, n_tokens), the
    count a tensor or an int.
    snapshot(model), if given, is recorded at ``cfg.checkpoints`` evenly spaced steps (and step 0).
    on_log(step, model), if given, adds entries (e.g. validation loss) to the logged row.
    on_row(row), if given, receives each logged row as it is made (the live DVCLive log).
    A non-finite loss raises ``DivergedError`` (on the CPU at once, on CUDA at the next logged row), naming ``what`` (task, scheme, seed), the step and the lr.
    """
    prepare_device(device)
    model.to(device).train()
    optimizer = make_optimizer(model, cfg)
    scaler = grad_scaler(device)
    schedule = lr_schedule(optimizer, cfg)
    result = TrainResult()
    snapshot_steps = snapshot_schedule(cfg) if snapshot is not None else set()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    window = LossWindow(what, check_every_step=device.type == "cpu")  # CUDA: no host sync per step
    tokens = torch.zeros((), dtype=torch.long, device=device)
    bar = tqdm(range(cfg.steps), desc=desc, leave=False, mininterval=1.0)
    for step in bar:
        if step in snapshot_steps:
            tick = time.perf_counter()
            result.snapshots.append((step, snapshot(model)))
            result.eval_time_s += time.perf_counter() - tick
        batch = to_device(next_batch(step), device)
        with autocast(device):
            loss, n_tokens = loss_fn(model, batch)
        window.add(step, loss.detach(), schedule.get_last_lr()[0])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if cfg.grad_clip > 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        tokens += n_tokens
        if is_log_step(step, cfg):
            row = {"step": step + 1, "loss": window.mean()[0], "lr": schedule.get_last_lr()[0]}
            if on_log is not None:
                tick = time.perf_counter()
                row.update(on_log(step + 1, model))
                model.train()
                result.eval_time_s += time.perf_counter() - tick
            result.history.append(row)
            if on_row is not None:
                on_row(row)
            bar.set_postfix(loss=f"{row['loss']:.4f}")
    result.tokens = int(tokens)
    if snapshot is not None and cfg.steps in snapshot_steps:
        tick = time.perf_counter()
        result.snapshots.append((cfg.steps, snapshot(model)))
        result.eval_time_s += time.perf_counter() - tick
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        result.peak_memory_mb = torch.cuda.max_memory_allocated(device) / 2**20
    result.wall_time_s = time.perf_counter() - start - result.eval_time_s
    return result
