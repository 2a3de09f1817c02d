"""Train (task, scheme) runs, one per seed, into their run directories (see ``checkpoint``), atomically:
one seed at a time, or the seeds of a (task, scheme) together as one vectorised model."""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import torch

from pelab import io
from pelab.config import Params, to_dict
from pelab.positional import PositionalEncoding, check_scheme
from pelab.runner.checkpoint import RUN_FILE, WEIGHTS
from pelab.runner.live import live_logger
from pelab.tasks import get_task
from pelab.tasks.base import HELD_OUT_LOSSES
from pelab.training.accounting import run_cost
from pelab.training.loop import TrainResult, pick_device, train, use_deterministic_algorithms
from pelab.training.seeding import seeded
from pelab.training.vectorised import train_seeds

# wall_time_s, tokens_per_s and peak_memory_mb are the training process's: all ``seeds_together`` seeds' when
# they trained stacked (the time of one run alone is not measured then)
COST_METRICS = ("params_total", "params_without_positional", "wall_time_s", "tokens_per_s", "peak_memory_mb",
                "final_loss", "seeds_together")


def position_snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters of the model's first positional module (the learned table, T5 biases), for the
    PCA-over-training figure; empty for schemes without parameters."""
    pe = next(m for m in model.modules() if isinstance(m, PositionalEncoding))
    return {name: p.detach().cpu().clone() for name, p in pe.named_parameters()}


def train_run(params: Params, task_name: str, scheme: str, seed: int, data_dir: str | Path, out_dir: str | Path,
              device: str | None = None, live_dir: str | Path | None = None) -> dict[str, float]:
    """Train and write ``out_dir``; returns the run's cost record. ``out_dir`` appears only when complete.

    ``live_dir``, if given, receives the training curves as they are logged (DVCLive, ``runner.live``).
    """
    return train_runs(params, task_name, scheme, [seed], data_dir, [out_dir], device,
                      None if live_dir is None else [live_dir], vectorise=False)[0]


def train_runs(params: Params, task_name: str, scheme: str, seeds: Sequence[int], data_dir: str | Path,
               out_dirs: Sequence[str | Path], device: str | None = None,
               live_dirs: Sequence[str | Path] | None = None, vectorise: bool | None = None,
               resume: str | Path | None = None, save_every_s: float = 300.0) -> list[dict[str, float]]:
    """Train one run per seed into ``out_dirs`` (each appears only when complete); returns their cost records.

    ``vectorise``: train the seeds together as one vectorised model (``training.vectorised``), if the task
    allows it (``Task.vectorises``). None (auto): on CUDA always; on the CPU only for tasks whose batches need
    no padding to stack — on 2 cores stacking gains 1.15x for copy, while padding the translation seeds'
    batches to one length costs more than it saves (346 s stacked vs 277 s one by one,
    benchmarks/results/quick_profile.md). Otherwise the seeds train one after another.

    ``resume``: a file under which a killed stage's work survives. Stacked seeds save their whole state there
    every ``save_every_s`` seconds and continue from it; seeds trained one after another keep each finished run
    beside it (``<resume without .pt>/seed_<k>``) and are not retrained. Removed once every run is written.
    """
    task, cfg = get_task(task_name), params.task(task_name)
    check_scheme(scheme)
    dev = pick_device(device or params.device)
    data = task.load_data(Path(data_dir))
    info = task.data_info(data)
    options = cfg.options(scheme)
    use_deterministic_algorithms()
    validate = task.validation(cfg, data, dev)
    on_log = (lambda step, m: validate(m)) if validate else None
    snapshot = position_snapshot if cfg.train.checkpoints > 0 else None
    live_dirs = list(live_dirs) if live_dirs is not None else [None] * len(seeds)
    if vectorise is None:
        vectorise = dev.type == "cuda" or task.batch_padding is None
    stacked = vectorise and task.vectorises and len(seeds) > 1
    # what a run is trained from: a state saved before a kill is reused only if this still matches
    identity = {"task": task_name, "scheme": scheme, "model": to_dict(cfg.model), "train": to_dict(cfg.train),
                "options": to_dict(options), "info": info}

    def build(seed: int) -> torch.nn.Module:
        model = task.build_model(cfg.model, scheme, options, seed, info)
        for pe in (m for m in model.modules() if isinstance(m, PositionalEncoding)):
            pe.check_length(int(info["max_length"]))
        return model

    def save(seed: int, model: torch.nn.Module, result: TrainResult, out_dir: str | Path, seconds: float) -> dict:
        cost = {**run_cost(model, result, dev), **task.train_summary(cfg, data),
                "seeds_together": len(seeds) if stacked else 1}  # wall time and tokens are the whole stack's
        rows = [{"split": "train", "length": "all", "metric": m, "value": float(cost[m])} for m in COST_METRICS]
        for key in HELD_OUT_LOSSES:  # the task's held-out curve, at the last step
            if key in result.history[-1]:
                rows.append({"split": key.removesuffix("_loss"), "length": "all", "metric": "loss",
                             "value": float(result.history[-1][key])})
        ident = {"task": task_name, "pe": scheme, "seed": seed}
        with io.atomic_dir(out_dir) as tmp:
            torch.save(model.cpu().state_dict(), tmp / WEIGHTS)
            if result.snapshots and result.snapshots[0][1]:
                torch.save(result.snapshots, tmp / "position_snapshots.pt")
            io.write_csv(tmp / "history.csv", result.history)
            io.write_jsonl(tmp / "train_records.jsonl", [{**ident, **row} for row in rows])
            io.write_json(tmp / RUN_FILE, {**identity, "seed": seed, "profile": params.profile, "cost": cost,
                                            "total_time_s": seconds})
        return cost

    if stacked:
        start = time.perf_counter()
        models = [build(seed) for seed in seeds]
        whats = [f"task {task_name}, scheme {scheme}, seed {seed}" for seed in seeds]
        with seeded(seeds[0]), ExitStack() as stack:  # seeded: the dropout streams, the same for every scheme
            loggers = [stack.enter_context(live_logger(d)) for d in live_dirs]
            results = train_seeds(
                models, [task.batches(cfg, data, seed) for seed in seeds], task.loss(cfg), cfg.train, dev,
                pad_values=task.batch_padding, desc=f"{task_name} {scheme} seeds {','.join(map(str, seeds))}",
                snapshot=snapshot, on_log=on_log,
                on_rows=[log or (lambda row: None) for log in loggers], what=whats, resume=resume,
                resume_key={**identity, "seeds": list(seeds)}, save_every_s=save_every_s,
            )
        seconds = time.perf_counter() - start
        costs = [save(seed, model, result, out, seconds)
                 for seed, model, result, out in zip(seeds, models, results, out_dirs)]
        if resume is not None:
            Path(resume).unlink(missing_ok=True)
        return costs

    costs = []
    finished = None if resume is None else Path(resume).with_suffix("")  # finished runs of a killed stage
    for seed, out_dir, live_dir in zip(seeds, out_dirs, live_dirs):
        kept = None if finished is None else finished / f"seed_{seed}"
        if kept is not None and _same_run(kept, identity, seed):
            shutil.copytree(kept, out_dir)  # trained before the kill: not again
            if live_dir is not None and (kept.parent / f"live_{seed}").exists():
                shutil.copytree(kept.parent / f"live_{seed}", live_dir, dirs_exist_ok=True)
            print(f"note: {task_name} {scheme} seed {seed} was trained before an interruption; kept")
            costs.append(io.read_json(Path(out_dir) / RUN_FILE)["cost"])
            continue
        start = time.perf_counter()
        model = build(seed)
        with seeded(seed), live_logger(live_dir) as log_row:  # seeded: the dropout stream, the same for every scheme
            result = train(
                model, task.batches(cfg, data, seed), task.loss(cfg), cfg.train, dev,
                desc=f"{task_name} {scheme} seed {seed}", snapshot=snapshot, on_log=on_log, on_row=log_row,
                what=f"task {task_name}, scheme {scheme}, seed {seed}",
            )
        costs.append(save(seed, model, result, out_dir, time.perf_counter() - start))
        if kept is not None and len(seeds) > 1:
            shutil.copytree(out_dir, kept, dirs_exist_ok=True)
            if live_dir is not None and Path(live_dir).exists():
                shutil.copytree(live_dir, kept.parent / f"live_{seed}", dirs_exist_ok=True)
    if finished is not None:
        shutil.rmtree(finished, ignore_errors=True)
    return costs


def _same_run(kept: Path, identity: dict, seed: int) -> bool:
    """Whether ``kept`` is a complete run of this seed, trained from exactly ``identity``."""
    if not (kept / RUN_FILE).exists() or not (kept / WEIGHTS).exists():
        return False
    run = io.read_json(kept / RUN_FILE)
    return run["seed"] == seed and all(run.get(key) == value for key, value in identity.items())
