"""The one training loop, for S >= 1 seeds of a (task, scheme): AdamW, linear warmup then cosine decay,
gradient clipping, mixed precision on CUDA (``pelab.device``), a tqdm bar, a per-step loss history, a saved
state that a killed run continues from, and each seed's weights at its lowest validation loss (``BestWeights``):
what the run returns and evaluation scores.

At S = 1 the model trains as it is; at S > 1 the seeds train together as one vectorised model
(``training.stacking``). Either way seed k's weights, data order and optimisation are its own.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from pelab.config import TrainConfig
from pelab.device import prepare_device, to_device
from pelab.training.adamw import AdamW, Schedule
from pelab.training.graphs import TrainStep, graph_safe
from pelab.training.stacking import Batch, LossFn, SeedStack


class DivergedError(ValueError):
    """The training loss became NaN or infinite: the run stops and nothing downstream runs on it."""


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """LR multiplier: linear warmup to 1 over ``warmup`` steps, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def decays(name: str, param: torch.Tensor, stacked: bool = False) -> bool:
    """Whether AdamW decays this parameter: matrices only, never embeddings or position tables (GPT-2
    convention). ``stacked``: the parameter carries a leading seed dimension (``training.stacking``)."""
    return param.ndim - int(stacked) >= 2 and "embedding" not in name and ".pe." not in name


def adamw(decay: list[torch.Tensor], no_decay: list[torch.Tensor], cfg: TrainConfig,
          capturable_on: torch.device | None = None) -> AdamW | torch.optim.Optimizer:
    """AdamW, betas (0.9, 0.98), on torch's fused kernel (one pass over every parameter; on the CPU it took 0-6% off
    a quick-size step, benchmarks/results/quick_profile.md): ``training.adamw.AdamW``, which spares each process
    the 2 s import of ``torch._dynamo`` that constructing a ``torch.optim`` optimizer costs, with bit-for-bit
    torch's updates; torch's own foreach AdamW on a device without the fused kernel (the same update rule).
    ``capturable_on``: the device whose CUDA graphs capture the step (``training.graphs``): torch's capturable
    AdamW, its step count and learning rate on that device, the lr a tensor that the schedule fills in place."""
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if capturable_on is not None:
        lr = torch.tensor(cfg.lr, device=capturable_on)
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98), fused=True, capturable=True)
    device = next((p.device for p in decay + no_decay), torch.device("cpu"))
    if device.type in ("cpu", "cuda"):  # where torch has the fused kernel
        return AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98))
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98))


@dataclass
class TrainResult:
    history: list[dict[str, float]] = field(default_factory=list)  # {"step", "loss", "lr"}
    wall_time_s: float = 0.0  # optimisation only: time spent in ``on_log`` and ``snapshot`` is not counted
    eval_time_s: float = 0.0  # time spent in ``on_log`` and ``snapshot``
    tokens: int = 0
    peak_memory_mb: float = 0.0
    snapshots: list[tuple[int, dict[str, torch.Tensor]]] = field(default_factory=list)
    cuda_graphs: bool = False  # the steps replayed from CUDA graphs (``training.graphs``)
    # the logged step whose weights the model holds on return (``BestWeights``), the validation loss there and at
    # the last step; best_step is the last step and both losses None when nothing was selected on
    best_step: int = 0
    best_val_loss: float | None = None
    final_val_loss: float | None = None


class BestWeights:
    """Each seed's weights at its lowest ``key`` loss so far (one rule for every scheme and seed: the logged step
    of lowest validation loss, the earlier on a tie), kept on the device beside training.

    Early stopping's model selection (Prechelt, "Early stopping - but when?", 1998) without the stopping: every
    run trains its whole budget, so each curve is complete, and is scored at its best logged step. ``key`` must
    name a loss on data held out from training and from every test set (``val_loss``)."""

    def __init__(self, n_seeds: int, key: str | None) -> None:
        self.key = key
        self.steps: list[int] = [0] * n_seeds
        self.losses: list[float] = [math.inf] * n_seeds
        self.states: list[dict[str, torch.Tensor] | None] = [None] * n_seeds

    def offer(self, seed: int, step: int, row: dict[str, float], model: nn.Module) -> None:
        """Seed ``seed``'s logged ``row`` at ``step``, ``model`` holding its current weights."""
        loss = row.get(self.key) if self.key else None
        if loss is not None and math.isfinite(loss) and loss < self.losses[seed]:
            self.steps[seed], self.losses[seed] = step, float(loss)
            self.states[seed] = {name: t.detach().clone() for name, t in model.state_dict().items()}

    def restore(self, models: Sequence[nn.Module], results: Sequence[TrainResult], last_step: int) -> None:
        """Load each seed's best weights into its model and record the selection in its result."""
        for s, (model, result) in enumerate(zip(models, results)):
            final = result.history[-1].get(self.key) if self.key and result.history else None
            result.final_val_loss = None if final is None else float(final)
            if self.states[s] is None:  # nothing logged to select on: the last step's weights
                result.best_step = last_step
                continue
            model.load_state_dict(self.states[s])
            result.best_step, result.best_val_loss = self.steps[s], self.losses[s]

    def state(self) -> list[tuple[int, float, dict[str, torch.Tensor] | None]]:
        """What a saved training state keeps of the selection (the weights on the CPU)."""
        return [(step, loss, None if w is None else {n: t.cpu() for n, t in w.items()})
                for step, loss, w in zip(self.steps, self.losses, self.states)]

    def load(self, saved: list[tuple[int, float, dict[str, torch.Tensor] | None]], device: torch.device) -> None:
        for s, (step, loss, w) in enumerate(saved):
            self.steps[s], self.losses[s] = step, loss
            self.states[s] = None if w is None else {n: t.to(device) for n, t in w.items()}


def load_optimizer_state(optimizer: AdamW | torch.optim.Optimizer, saved: dict,
                         capturable_on: torch.device | None) -> None:
    """``optimizer.load_state_dict``, keeping the optimizer's own mode: a state saved by an eager run resumes a
    graphed one and the other way round (torch's optimizer takes the saved groups whole: the settings ours does not
    save are filled from its own groups first; the lr is the schedule's to set)."""
    if isinstance(optimizer, torch.optim.Optimizer):
        own = optimizer.state_dict()["param_groups"]
        saved = {**saved, "param_groups": [{**mine, **{k: v for k, v in group.items() if k != "lr"}, "lr": mine["lr"]}
                                           for mine, group in zip(own, saved["param_groups"])]}
        for group in saved["param_groups"]:
            group["capturable"] = capturable_on is not None
    optimizer.load_state_dict(saved)


def lr_schedule(optimizer: AdamW | torch.optim.Optimizer, cfg: TrainConfig) -> Schedule:
    """Linear warmup then cosine decay (``warmup_cosine``) of ``cfg.lr``."""
    return Schedule(optimizer, cfg.lr, lambda s: warmup_cosine(s, cfg.steps, cfg.warmup_steps))


def current_lr(schedule: Schedule) -> float:
    """The learning rate the next step uses, as a float (the groups' values are device tensors when the optimizer
    is capturable, which reading would sync)."""
    return schedule.lr()


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

    Losses are (S,): one per seed."""

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
    models: Sequence[nn.Module],
    next_batches: Sequence[Callable[[int], Batch]],
    loss_fn: LossFn,
    cfg: TrainConfig,
    device: torch.device,
    *,
    pad_values: Sequence[int] | None = None,
    desc: str = "train",
    snapshot: Callable[[nn.Module], dict[str, torch.Tensor]] | None = None,
    on_log: Callable[[int, nn.Module], dict[str, float]] | None = None,
    on_rows: Sequence[Callable[[dict[str, float]], None]] | None = None,
    what: Sequence[str] | None = None,
    state_file: str | Path | None = None,
    state_key: dict | None = None,
    save_every_s: float = 300.0,
    graphs: bool = False,
    select_on: str | None = "val_loss",
) -> list[TrainResult]:
    """Train S models (same architecture, each built from its own seed) for ``cfg.steps`` steps; on return each
    holds its trained weights (on ``device``). Returns one ``TrainResult`` per seed; when S > 1 its
    ``wall_time_s`` and ``tokens`` are the whole stack's.

    next_batches[s](step) -> seed s's batch (moved to ``device`` here; padded with ``pad_values`` to stack);
    loss_fn(model, batch) -> (mean loss, n_tokens), the count a tensor or an int.
    snapshot(model), if given, is recorded per seed at ``cfg.checkpoints`` evenly spaced steps (and step 0).
    on_log(step, model), if given, adds entries (e.g. validation loss) to each seed's logged row; on_rows[s]
    receives seed s's rows as they are made (the live curves, ``runner.live``).
    A non-finite loss raises ``DivergedError`` (on the CPU at once, on CUDA at the next logged row), naming
    ``what[s]`` (task, scheme, seed), the step and the lr.

    ``state_file``: where the whole training state (weights, AdamW moments, schedule, RNG, curves so far) is
    saved after a logged row whenever ``save_every_s`` seconds have passed since the last save, and from which a
    killed run continues where it stopped (if ``state_key``, which names what is trained, still matches). The
    caller removes it once the runs are written.

    ``graphs``: on CUDA, each batch shape's step is captured as a CUDA graph and replayed (``training.graphs``),
    unless a model draws positions on the host; elsewhere ignored.

    ``select_on``: the logged entry (from ``on_log``) each seed's returned weights are selected on, its lowest value
    over the logged steps (``BestWeights``); with no such entry logged, the last step's weights.
    """
    n_seeds = len(models)
    prepare_device(device)
    for model in models:
        model.to(device).train()
    seeds = SeedStack(models, loss_fn, pad_values)
    names = list(seeds.params)
    graphed = graphs and device.type == "cuda" and graph_safe(list(models))
    optimizer = adamw([seeds.params[n] for n in names if decays(n, seeds.params[n], seeds.stacked)],
                      [seeds.params[n] for n in names if not decays(n, seeds.params[n], seeds.stacked)], cfg,
                      capturable_on=device if graphed else None)
    schedule = lr_schedule(optimizer, cfg)
    results = [TrainResult() for _ in range(n_seeds)]
    snapshot_steps = snapshot_schedule(cfg) if snapshot is not None else set()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    window = LossWindow(list(what) if what else [""] * n_seeds, check_every_step=device.type == "cpu")
    tokens = torch.zeros(n_seeds, dtype=torch.long, device=device)
    best = BestWeights(n_seeds, select_on)
    eval_time = 0.0

    def per_seed(call: Callable[[int, nn.Module], None]) -> None:
        nonlocal eval_time
        tick = time.perf_counter()
        seeds.for_each(call)
        eval_time += time.perf_counter() - tick

    first_step, elapsed = 0, 0.0
    state = load_state(state_file, state_key)
    if state is not None:
        with torch.no_grad():
            for name in names:
                seeds.params[name].copy_(state["params"][name])
        load_optimizer_state(optimizer, state["optimizer"], device if graphed else None)
        schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        if device.type == "cuda" and state["cuda_rng"] is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        for result, (history, snapshots) in zip(results, state["results"]):
            result.history, result.snapshots = history, snapshots
        tokens += state["tokens"].to(device)
        best.load(state.get("best", []), device)
        first_step, elapsed, eval_time = state["step"], state["wall_time_s"], state["eval_time_s"]
        for step in range(first_step):  # replay the batch streams (stateful generators) up to the resumed step
            for next_batch in next_batches:
                next_batch(step)
    start = time.perf_counter() - elapsed
    last_save = time.perf_counter()
    train_step = TrainStep(seeds, optimizer, cfg.grad_clip, device, graphs=graphed)

    bar = tqdm(range(first_step, cfg.steps), desc=desc, leave=False, mininterval=1.0, initial=first_step,
               total=cfg.steps)
    for step in bar:
        if step in snapshot_steps:
            per_seed(lambda s, m: results[s].snapshots.append((step, snapshot(m))))
        batch = to_device(seeds.stack([next_batch(step) for next_batch in next_batches]), device)
        lr = current_lr(schedule)
        losses, counts = train_step(batch)  # (S,), (S,)
        window.add(step, losses, lr)
        schedule.step()
        tokens += counts
        if is_log_step(step, cfg):
            lr = current_lr(schedule)
            rows = [{"step": step + 1, "loss": loss, "lr": lr} for loss in window.mean()]
            if on_log is not None:
                def log_seed(s: int, m: nn.Module) -> None:
                    rows[s].update(on_log(step + 1, m))
                    best.offer(s, step + 1, rows[s], m)

                per_seed(log_seed)
            for s, row in enumerate(rows):
                results[s].history.append(row)
                if on_rows is not None:
                    on_rows[s](row)
            bar.set_postfix(loss=f"{sum(r['loss'] for r in rows) / n_seeds:.4f}")
            if state_file is not None and step + 1 < cfg.steps and time.perf_counter() - last_save >= save_every_s:
                save_state(state_file, {
                    "key": state_key, "step": step + 1, "params": {n: seeds.params[n].detach().cpu() for n in names},
                    "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(), "rng": torch.get_rng_state(),
                    "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                    "results": [(r.history, r.snapshots) for r in results], "tokens": tokens.cpu(),
                    "best": best.state(),
                    "wall_time_s": time.perf_counter() - start, "eval_time_s": eval_time,
                })
                last_save = time.perf_counter()
    if cfg.steps in snapshot_steps:
        per_seed(lambda s, m: results[s].snapshots.append((cfg.steps, snapshot(m))))
    seeds.write_back()
    best.restore(models, results, cfg.steps)
    peak = 0.0
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) / 2**20
    wall = time.perf_counter() - start - eval_time
    total = int(tokens.sum())
    for result in results:
        result.wall_time_s, result.eval_time_s, result.peak_memory_mb, result.tokens = wall, eval_time, peak, total
        result.cuda_graphs = graphed
    return results


def save_state(path: str | Path, state: dict) -> None:
    """Write atomically: a kill during the save leaves the previous state intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_state(path: str | Path | None, key: dict | None) -> dict | None:
    if path is None or not Path(path).exists():
        return None
    state = torch.load(path, map_location="cpu", weights_only=False)
    if state.get("key") != key:
        print(f"note: {path} holds another training state (its key differs); starting from step 0")
        return None
    print(f"resuming from step {state['step']} ({path})")
    return state
