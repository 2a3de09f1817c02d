"""Train the runs of one (task, scheme), one per seed, into their run directories (see ``checkpoint``),
atomically: every seed together as one vectorised model, or one after another."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from pelab import io
from pelab.config import to_dict
from pelab.device import pick_device, precision, use_deterministic_algorithms
from pelab.positional import PositionalEncoding, check_scheme, draws_positions, scheme_spec
from pelab.runner.checkpoint import RUN_FILE, WEIGHTS
from pelab.runner.kept_runs import KeptRuns, fingerprint
from pelab.runner.live import live_logger
from pelab.tasks import get_task
from pelab.training.accounting import run_cost
from pelab.training.loop import TrainResult, train
from pelab.seeding import seeded

if TYPE_CHECKING:  # not imported at run time: params.py and the study records are not what a run is trained from
    from pelab.params import Params

# every run's weights are those of its logged step of lowest validation loss (training.loop.BestWeights)
SELECTED_ON = "val_loss"

# wall_time_s, tokens_per_s and peak_memory_mb are the training process's: all ``seeds_together`` seeds' when
# they trained stacked (the time of one run alone is not measured then)
COST_METRICS = ("params_total", "params_without_positional", "wall_time_s", "tokens_per_s", "peak_memory_mb",
                "final_loss", "seeds_together")


def position_snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters of the model's first positional module (the learned table, T5 biases), for the
    PCA-over-training figure; empty for schemes without parameters."""
    pe = next(m for m in model.modules() if isinstance(m, PositionalEncoding))
    return {name: p.detach().cpu().clone() for name, p in pe.named_parameters()}


def draws_random_numbers(cfg, scheme: str) -> bool:
    """Whether training draws random numbers (dropout, randomized positions): a seed's draws then depend on the
    stack of seeds it trains in."""
    return getattr(cfg.model, "dropout", 0.0) > 0 or draws_positions(scheme)


def stacks_by_default(task, scheme: str, device_type: str, draws: bool) -> bool:
    """Whether a (task, scheme)'s seeds train together unless asked otherwise (``train_runs``' ``stack``)."""
    if device_type == "cuda":  # graphed steps (``PositionalEncoding.graph_safe``) may run faster one seed at a time
        graphed = task.graph_steps and scheme_spec(scheme).graph_safe
        return task.stack_when_graphed or not graphed
    # on the CPU not where training draws: there adding a seed trains only that seed
    return task.batch_padding is None and task.stack_on_cpu and not draws


def train_run(params: Params, task_name: str, scheme: str, seed: int, data_dir: str | Path, out_dir: str | Path,
              device: str | None = None) -> dict[str, float]:
    """Train one seed into ``out_dir`` (which appears only when complete); returns the run's cost record."""
    return train_runs(params, task_name, scheme, [seed], data_dir, [out_dir], device)[0]


def train_runs(params: Params, task_name: str, scheme: str, seeds: Sequence[int], data_dir: str | Path,
               out_dirs: Sequence[str | Path], device: str | None = None,
               live_dirs: Sequence[str | Path] | None = None, stack: bool | None = None,
               kept: str | Path | None = None, save_every_s: float = 300.0,
               tuning: bool = False) -> list[dict[str, float]]:
    """Train one run per seed into ``out_dirs`` (each appears only when complete); returns their cost records.

    ``live_dirs``, if given, receive each seed's training curves as they are logged (``runner.live``).

    ``stack``: train the seeds together as one vectorised model (``training.stacking``), if the task allows it
    (``Task.vectorises``). None (auto): on CUDA always, except where the graphed step of one seed is faster
    (``Task.stack_when_graphed``: the LM study, but its randomized schemes); on the CPU only for tasks whose batches
    need no padding
    to stack (padding the translation seeds' batches to one length costs more than stacking saves there:
    benchmarks/results/quick_profile.md), that do not opt out (``Task.stack_on_cpu``: the LM study) and where
    training draws no random numbers (the randomized schemes: stacked, adding a seed would retrain the stack).
    Otherwise the seeds train one after another.

    ``kept``: a folder for this (task, scheme) (``runner.kept_runs``): a seed whose run is kept there, trained
    from exactly what it would be trained from now, is restored instead of trained; every run trained here is
    kept there; and the training in progress saves its state there every ``save_every_s`` seconds, so that a
    killed stage continues from it.

    ``tuning``: train on the task's tuning data (``Task.tuning_data``: no test rows; its validation loss is what
    the learning-rate sweep, ``runner.tune``, selects on).
    """
    task, cfg = get_task(task_name), params.task(task_name)
    check_scheme(scheme)
    dev = pick_device(device or params.device)
    data = task.load_data(Path(data_dir))
    data, whole = (task.tuning_data(cfg, data) if tuning else data), data
    cfg = task.budget(cfg, data)
    info = task.data_info(data)
    options = cfg.options(scheme)
    use_deterministic_algorithms()
    validate = task.validation(cfg, data, dev)
    on_log = (lambda step, m: validate(m)) if validate else None
    snapshot = position_snapshot if cfg.train.checkpoints > 0 else None
    live_dirs = list(live_dirs) if live_dirs is not None else [None] * len(seeds)
    store = KeptRuns(kept) if kept is not None else None
    # what a run is trained from: a kept run or a saved state is reused only if this still matches
    identity = {"task": task_name, "scheme": scheme, "model": to_dict(cfg.model), "train": to_dict(cfg.train),
                "options": to_dict(options), "info": info, "precision": precision(dev), "selected_on": SELECTED_ON}
    if data is not whole:  # trained on part of the training split: never restored as an ordinary run
        identity["tuning"] = True
    if store is not None:
        identity["fingerprint"] = fingerprint(data_dir, task_name, scheme)
    # where training draws random numbers (dropout, randomized positions), a seed's draws depend on the stack it
    # trains in (vmap's per-seed streams): a kept run is then restored only if it trained in the same stack
    draws = draws_random_numbers(cfg, scheme)
    if stack is None:
        stack = stacks_by_default(task, scheme, dev.type, draws)
    stack = stack and task.vectorises

    def stack_of(seed: int) -> list[int] | None:
        return (list(seeds) if stack else [seed]) if draws else None

    todo = [k for k, seed in enumerate(seeds)
            if store is None or not store.restore(seed, identity, out_dirs[k], live_dirs[k], stack_of(seed))]
    for k in set(range(len(seeds))) - set(todo):
        print(f"note: {task_name} {scheme} seed {seeds[k]} was trained before from the same inputs; kept")
    groups = [todo] if stack else [[k] for k in todo]
    for group in (g for g in groups if g):
        group_seeds = [seeds[k] for k in group]
        start = time.perf_counter()
        models = [task.build_model(cfg.model, scheme, options, seed, info) for seed in group_seeds]
        for pe in (m for model in models for m in model.modules() if isinstance(m, PositionalEncoding)):
            pe.check_length(int(info["max_length"]))
        with seeded(group_seeds[0]), ExitStack() as loggers:  # seeded: the dropout streams, the same for every scheme
            on_rows = [loggers.enter_context(live_logger(live_dirs[k])) or (lambda row: None) for k in group]
            results = train(
                models, [task.batches(cfg, data, seed) for seed in group_seeds], task.loss(cfg), cfg.train, dev,
                pad_values=task.batch_padding, desc=f"{task_name} {scheme} seed{'s' * (len(group) > 1)} "
                f"{','.join(map(str, group_seeds))}", snapshot=snapshot, on_log=on_log, on_rows=on_rows,
                what=[f"task {task_name}, scheme {scheme}, seed {seed}" for seed in group_seeds],
                state_file=None if store is None else store.state_file,
                state_key={**identity, "seeds": group_seeds}, save_every_s=save_every_s, graphs=task.graph_steps,
                select_on=SELECTED_ON,
            )
        seconds = time.perf_counter() - start
        for k, model, result in zip(group, models, results):
            _write_run(params, task, cfg, data, identity, seeds[k], group_seeds, model, result, out_dirs[k], dev,
                       seconds)
            if store is not None:
                store.keep(seeds[k], out_dirs[k], live_dirs[k])
        if store is not None:
            store.state_file.unlink(missing_ok=True)
    return [io.read_json(Path(out) / RUN_FILE)["cost"] for out in out_dirs]


def _write_run(params: Params, task, cfg, data, identity: dict, seed: int, stack: list[int],
               model: torch.nn.Module, result: TrainResult, out_dir: str | Path, dev: torch.device,
               seconds: float) -> None:
    cost = {**run_cost(model, result, dev), **task.train_summary(cfg, data), "seeds_together": len(stack),
            "best_step": result.best_step, "best_val_loss": result.best_val_loss,
            "final_val_loss": result.final_val_loss}
    rows = [{"split": "train", "length": "all", "metric": m, "value": float(cost[m])} for m in COST_METRICS
            + tuple(m for m in ("cuda_graphs", "epochs") if m in cost)]
    rows.append({"split": "train", "length": "all", "metric": "best_step", "value": float(result.best_step)})
    rows.append({"split": "train", "length": "all", "metric": "steps", "value": float(cfg.train.steps)})
    if result.best_val_loss is not None:  # the validation loss of the weights scored, and at the last step
        rows.append({"split": "val", "length": "all", "metric": "loss", "value": result.best_val_loss})
        rows.append({"split": "val", "length": "all", "metric": "loss_last", "value": result.final_val_loss})
    ident = {"task": identity["task"], "pe": identity["scheme"], "seed": seed}
    with io.atomic_dir(out_dir) as tmp:
        torch.save(model.cpu().state_dict(), tmp / WEIGHTS)
        if result.snapshots and result.snapshots[0][1]:
            torch.save(result.snapshots, tmp / "position_snapshots.pt")
        io.write_csv(tmp / "history.csv", result.history)
        io.write_jsonl(tmp / "train_records.jsonl", [{**ident, **row} for row in rows])
        io.write_json(tmp / RUN_FILE, {**identity, "seed": seed, "stack": stack, "profile": params.profile,
                                        "cost": cost, "total_time_s": seconds})
