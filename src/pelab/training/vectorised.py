"""The seeds of one (task, scheme) trained together as one vectorised model.

Every parameter is stacked along a leading seed dimension (S, ...) (``torch.func.stack_module_state``) and one
model's forward is mapped over it with ``torch.func.vmap`` (https://pytorch.org/docs/stable/func.html; the
model-ensembling tutorial https://pytorch.org/tutorials/intermediate/ensembling.html). Each step runs every
seed's forward and backward as one set of batched kernels: a tiny model that leaves a GPU (or the CPU's vector
units) idle when trained alone fills it when trained five at a time.

What each seed keeps exactly, so that seed k inside the stack is the run ``training.loop.train`` makes alone:

* its initial weights: the stack is built from the S models each task built from its own seed;
* its data order: seed k's batches come from its own ``next_batch``; batches of different lengths are padded
  to one shape with the task's padding (``Task.stack_batches``), which masks and losses ignore;
* its optimisation: AdamW is elementwise, so one AdamW over the stacked tensors is S independent AdamWs; the
  gradient is clipped per seed, by that seed's own global norm (``clip_grad_norm_``'s formula);
* its dropout: vmap draws independent masks per seed (``randomness="different"``) from one generator seeded
  by the first seed. They are reproducible, and independent across seeds, but they are not the masks of the
  seed's sequential run (vmap has no per-seed generator), so with dropout > 0 a vectorised seed is a
  different - equally valid - sample than its sequential run. With dropout 0 (the copy study) the two agree
  to float tolerance (``tests/test_vectorised.py``).

Mixed precision follows ``training.loop``; with fp16 (pre-Ampere GPUs only) one seed's overflow skips the
step for every seed, the price of one loss scaler.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from tqdm.auto import tqdm

from pelab.config import TrainConfig
from pelab.model.attention import MultiHeadAttention
from pelab.training.loop import (
    LossWindow,
    TrainResult,
    adamw,
    autocast,
    decays,
    grad_scaler,
    is_log_step,
    lr_schedule,
    prepare_device,
    snapshot_schedule,
    to_device,
)

Batch = tuple[torch.Tensor, ...]


class _Stateless:
    """What a task's loss function sees inside vmap: calling it runs ``module`` with the given parameters."""

    def __init__(self, module: nn.Module, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor]) -> None:
        self.module, self.params, self.buffers = module, params, buffers

    def __call__(self, *args, **kwargs):
        return functional_call(self.module, (self.params, self.buffers), args, kwargs)


def stack_batches(batches: Sequence[Batch], pad_values: Sequence[int] | None = None) -> Batch:
    """S batches of the same structure -> one batch with a leading seed dimension. Tensors of different shapes
    are padded at the end of every dimension to the largest, with ``pad_values[i]`` for the i-th tensor."""
    out = []
    for i, tensors in enumerate(zip(*batches)):
        shape = [max(t.shape[d] for t in tensors) for d in range(tensors[0].ndim)]
        if any(list(t.shape) != shape for t in tensors):
            if pad_values is None:
                raise ValueError(f"batch tensor {i} differs in shape across seeds and the task gives no padding")
            padded = torch.full((len(tensors), *shape), pad_values[i], dtype=tensors[0].dtype)
            for s, t in enumerate(tensors):
                padded[(s, *(slice(0, n) for n in t.shape))] = t
            out.append(padded)
        else:
            out.append(torch.stack(tensors))
    return tuple(out)


def clip_per_seed(params: Sequence[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Clip each seed's gradient (dimension 0 of every parameter) to global norm ``max_norm``, as
    ``torch.nn.utils.clip_grad_norm_`` does for one model: coef = max_norm / (norm + 1e-6), at most 1.
    Parameters may have any shape: a stacked scalar is (S,), a stacked matrix (S, m, n).
    Returns the per-seed norms before clipping, (S,)."""
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([g.reshape(g.shape[0], -1).float().norm(dim=1) for g in grads]).norm(dim=0)  # (S,)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype).view(-1, *([1] * (g.ndim - 1))))
    return norms


def _use_fused_attention(model: nn.Module, fused: bool) -> None:
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.fused = fused


def _copy_into(models: Sequence[nn.Module], params: dict[str, torch.Tensor]) -> None:
    """Write the stacked parameters back into the S models (for validation, snapshots and saving)."""
    with torch.no_grad():
        for s, model in enumerate(models):
            for name, p in model.named_parameters():
                p.copy_(params[name][s])


def train_seeds(
    models: Sequence[nn.Module],
    next_batches: Sequence[Callable[[int], Batch]],
    loss_fn: Callable[[nn.Module, Batch], tuple[torch.Tensor, torch.Tensor | int]],
    cfg: TrainConfig,
    device: torch.device,
    *,
    pad_values: Sequence[int] | None = None,
    desc: str = "train",
    snapshot: Callable[[nn.Module], dict[str, torch.Tensor]] | None = None,
    on_log: Callable[[int, nn.Module], dict[str, float]] | None = None,
    on_rows: Sequence[Callable[[dict[str, float]], None]] | None = None,
    what: Sequence[str] | None = None,
    resume: str | Path | None = None,
    resume_key: dict | None = None,
    save_every_s: float = 300.0,
    compile_step: bool = False,
) -> list[TrainResult]:
    """Train S models (same architecture, each from its own seed) together for ``cfg.steps`` steps.

    The arguments are ``training.loop.train``'s, one per seed where a seed has its own: ``next_batches[s]``,
    ``on_rows[s]``, ``what[s]``. ``on_log(step, model)`` and ``snapshot(model)`` are called per seed with that
    seed's model, holding its current weights. On return each model holds its trained weights (on ``device``).
    Returns one ``TrainResult`` per seed; ``wall_time_s`` and ``tokens`` are the whole stack's.

    ``resume``: a file where the whole training state (weights, AdamW moments, schedule, RNG, curves so far) is
    saved after a logged row whenever ``save_every_s`` seconds have passed since the last save, and from which
    a killed run continues where it stopped (if ``resume_key``, which names what is trained, still matches).
    The caller removes it once the runs are written.

    ``compile_step``: the stacked forward and loss through ``torch.compile`` (measured, not yet adopted:
    ``benchmarks/bench_compile.py``).
    """
    n_seeds = len(models)
    prepare_device(device)
    for model in models:
        model.to(device).train()
    template = models[0]
    _use_fused_attention(template, False)  # explicit attention inside vmap (model.attention.MultiHeadAttention)
    params, buffers = stack_module_state(list(models))  # {name: (S, ...)}, leaves that require grad
    names = list(params)
    optimizer = adamw([params[n] for n in names if decays(n, params[n], stacked=True)],
                      [params[n] for n in names if not decays(n, params[n], stacked=True)], cfg)
    scaler = grad_scaler(device)
    schedule = lr_schedule(optimizer, cfg)

    def seed_loss(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], batch: Batch):
        loss, count = loss_fn(_Stateless(template, p, b), batch)
        return loss, torch.as_tensor(count, device=loss.device)

    batched_loss = vmap(seed_loss, in_dims=(0, 0, 0), randomness="different")
    if compile_step:  # measured by benchmarks/bench_compile.py, not used by the pipeline until it wins somewhere
        batched_loss = torch.compile(batched_loss)
    results = [TrainResult() for _ in range(n_seeds)]
    snapshot_steps = snapshot_schedule(cfg) if snapshot is not None else set()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start, eval_time = time.perf_counter(), 0.0
    window = LossWindow(list(what) if what else [""] * n_seeds, check_every_step=device.type == "cpu")
    tokens = torch.zeros(n_seeds, dtype=torch.long, device=device)

    def per_seed(call: Callable[[int, nn.Module], None]) -> float:
        tick = time.perf_counter()
        _copy_into(models, params)
        _use_fused_attention(template, True)  # each model as it runs alone
        for s, model in enumerate(models):
            call(s, model)
            model.train()
        _use_fused_attention(template, False)
        return time.perf_counter() - tick

    first_step, elapsed = 0, 0.0
    state = _load_state(resume, resume_key)
    if state is not None:
        with torch.no_grad():
            for name in names:
                params[name].copy_(state["params"][name])
        optimizer.load_state_dict(state["optimizer"])
        scaler.load_state_dict(state["scaler"])
        schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        if device.type == "cuda" and state["cuda_rng"] is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        for result, (history, snapshots) in zip(results, state["results"]):
            result.history, result.snapshots = history, snapshots
        tokens += state["tokens"].to(device)
        first_step, elapsed, eval_time = state["step"], state["wall_time_s"], state["eval_time_s"]
        for step in range(first_step):  # replay the batch streams (stateful generators) up to the resumed step
            for next_batch in next_batches:
                next_batch(step)
    start -= elapsed
    last_save = time.perf_counter()

    def save_state(next_step: int) -> None:
        _save_state(resume, {
            "key": resume_key, "step": next_step, "params": {n: params[n].detach().cpu() for n in names},
            "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(), "schedule": schedule.state_dict(),
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "results": [(r.history, r.snapshots) for r in results], "tokens": tokens.cpu(),
            "wall_time_s": time.perf_counter() - start, "eval_time_s": eval_time,
        })

    bar = tqdm(range(first_step, cfg.steps), desc=desc, leave=False, mininterval=1.0, initial=first_step,
               total=cfg.steps)
    for step in bar:
        if step in snapshot_steps:
            eval_time += per_seed(lambda s, m: results[s].snapshots.append((step, snapshot(m))))
        batch = to_device(stack_batches([next_batch(step) for next_batch in next_batches], pad_values), device)
        with autocast(device):
            losses, counts = batched_loss(params, buffers, batch)  # (S,), (S,)
        window.add(step, losses.detach(), schedule.get_last_lr()[0])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(losses.sum()).backward()  # the seeds' losses are independent: each gets its own gradient
        if cfg.grad_clip > 0:
            scaler.unscale_(optimizer)
            clip_per_seed([params[n] for n in names], cfg.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        tokens += counts
        if is_log_step(step, cfg):
            lr = schedule.get_last_lr()[0]
            rows = [{"step": step + 1, "loss": loss, "lr": lr} for loss in window.mean()]
            if on_log is not None:
                eval_time += per_seed(lambda s, m: rows[s].update(on_log(step + 1, m)))
            for s, row in enumerate(rows):
                results[s].history.append(row)
                if on_rows is not None:
                    on_rows[s](row)
            bar.set_postfix(loss=f"{sum(r['loss'] for r in rows) / n_seeds:.4f}")
            if resume is not None and step + 1 < cfg.steps and time.perf_counter() - last_save >= save_every_s:
                save_state(step + 1)
                last_save = time.perf_counter()
    if cfg.steps in snapshot_steps:
        eval_time += per_seed(lambda s, m: results[s].snapshots.append((cfg.steps, snapshot(m))))
    _copy_into(models, params)
    _use_fused_attention(template, True)
    peak = 0.0
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) / 2**20
    wall = time.perf_counter() - start - eval_time
    total = int(tokens.sum())
    for result in results:
        result.wall_time_s, result.eval_time_s, result.peak_memory_mb, result.tokens = wall, eval_time, peak, total
    return results


def _save_state(path: str | Path, state: dict) -> None:
    """Write atomically: a kill during the save leaves the previous state intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _load_state(path: str | Path | None, key: dict | None) -> dict | None:
    if path is None or not Path(path).exists():
        return None
    state = torch.load(path, map_location="cpu", weights_only=False)
    if state.get("key") != key:
        print(f"note: {path} holds another training state (its key differs); starting from step 0")
        return None
    print(f"resuming from step {state['step']} ({path})")
    return state
