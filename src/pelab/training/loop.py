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
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from pelab.config import TrainConfig
from pelab.device import prepare_device, to_device
from pelab.training.adamw import AdamW, Schedule
from pelab.training.graphs import TrainStep, graph_safe
from pelab.training.stacking import Batch, LossFn, SeedStack
from pelab.training.state import BestWeights, TrainingState, TrainResult  # noqa: F401  (TrainResult: the runner's)


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
    convention); a scheme's token mixer (``token_mixer``, the layer in place of attention: ``positional.ssm``)
    decays as attention's weights do, but for its state matrix A (``A_log``, which Mamba never decays).
    ``stacked``: the parameter carries a leading seed dimension (``training.stacking``)."""
    matrix = param.ndim - int(stacked) >= 2 and "embedding" not in name
    if ".token_mixer." in name:
        return matrix and not name.endswith(".A_log")
    return matrix and ".pe." not in name


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
    prepare_device(device)
    for model in models:
        model.to(device).train()
    seeds = SeedStack(models, loss_fn, pad_values)
    params = seeds.params
    graphed = graphs and device.type == "cuda" and graph_safe(list(models))
    optimizer = adamw([p for n, p in params.items() if decays(n, p, seeds.stacked)],
                      [p for n, p in params.items() if not decays(n, p, seeds.stacked)], cfg,
                      capturable_on=device if graphed else None)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    state = TrainingState(seeds, optimizer, lr_schedule(optimizer, cfg), BestWeights(len(models), select_on), device,
                          graphed)
    saved = load_state(state_file, state_key)
    if saved is not None:
        state.load_state_dict(saved)
        for step in range(state.step):  # replay the batch streams (stateful generators) up to the resumed step
            for next_batch in next_batches:
                next_batch(step)
    snapshot_steps = snapshot_schedule(cfg) if snapshot is not None else set()
    window = LossWindow(list(what) if what else [""] * len(models), check_every_step=device.type == "cpu")
    train_step = TrainStep(seeds, optimizer, cfg.grad_clip, device, graphs=graphed)
    last_save = time.perf_counter()
    bar = tqdm(range(state.step, cfg.steps), desc=desc, leave=False, mininterval=1.0, initial=state.step,
               total=cfg.steps)
    for step in bar:
        if step in snapshot_steps:
            state.per_seed(lambda s, m: state.results[s].snapshots.append((step, snapshot(m))))
        batch = to_device(seeds.stack([next_batch(step) for next_batch in next_batches]), device)
        losses, counts = train_step(batch)  # (S,), (S,)
        window.add(step, losses, current_lr(state.schedule))
        state.schedule.step()
        state.tokens += counts
        state.step = step + 1
        if is_log_step(step, cfg):
            rows = state.log(step + 1, window.mean(), on_log, on_rows)
            bar.set_postfix(loss=f"{sum(r['loss'] for r in rows) / len(rows):.4f}")
            if state_file is not None and step + 1 < cfg.steps and time.perf_counter() - last_save >= save_every_s:
                save_state(state_file, {"key": state_key, **state.state_dict()})
                last_save = time.perf_counter()
    if cfg.steps in snapshot_steps:
        state.per_seed(lambda s, m: state.results[s].snapshots.append((cfg.steps, snapshot(m))))
    return state.finish(models, cfg.steps)


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
