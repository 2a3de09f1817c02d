"""Train one (task, scheme, seed) run into its run directory (see ``checkpoint``), atomically."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from pelab import io
from pelab.config import Params, to_dict
from pelab.positional import PositionalEncoding, check_scheme
from pelab.runner.checkpoint import RUN_FILE, WEIGHTS
from pelab.runner.live import live_logger
from pelab.tasks import get_task
from pelab.training.accounting import run_cost
from pelab.training.loop import pick_device, train
from pelab.training.seeding import seeded

COST_METRICS = ("params_total", "params_without_positional", "wall_time_s", "tokens_per_s", "peak_memory_mb",
                "final_loss")


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
    task, cfg = get_task(task_name), params.task(task_name)
    check_scheme(scheme)
    dev = pick_device(device or params.device)
    data = task.load_data(Path(data_dir))
    info = task.data_info(data)
    options = cfg.options(scheme)
    model = task.build_model(cfg.model, scheme, options, seed, info)
    for pe in (m for m in model.modules() if isinstance(m, PositionalEncoding)):
        pe.check_length(int(info["max_length"]))
    torch.use_deterministic_algorithms(True, warn_only=True)
    validate = task.validation(cfg, data, dev)
    start = time.perf_counter()
    with seeded(seed), live_logger(live_dir) as log_row:  # seeded: the dropout stream, the same for every scheme
        result = train(
            model, task.batches(cfg, data, seed), task.loss(cfg), cfg.train, dev,
            desc=f"{task_name} {scheme} seed {seed}",
            snapshot=position_snapshot if cfg.train.checkpoints > 0 else None,
            on_log=(lambda step, m: validate(m)) if validate else None,
            on_row=log_row,
            what=f"task {task_name}, scheme {scheme}, seed {seed}",
        )
    cost = {**run_cost(model, result, dev), **task.train_summary(cfg, data)}
    rows = [{"split": "train", "length": "all", "metric": m, "value": float(cost[m])} for m in COST_METRICS]
    if "val_loss" in result.history[-1]:
        rows.append({"split": "val", "length": "all", "metric": "loss", "value": float(result.history[-1]["val_loss"])})
    ident = {"task": task_name, "pe": scheme, "seed": seed}
    with io.atomic_dir(out_dir) as tmp:
        torch.save(model.cpu().state_dict(), tmp / WEIGHTS)
        if result.snapshots and result.snapshots[0][1]:
            torch.save(result.snapshots, tmp / "position_snapshots.pt")
        io.write_csv(tmp / "history.csv", result.history)
        io.write_jsonl(tmp / "train_records.jsonl", [{**ident, **row} for row in rows])
        io.write_json(tmp / RUN_FILE, {
            "task": task_name, "scheme": scheme, "seed": seed, "profile": params.profile,
            "model": to_dict(cfg.model), "train": to_dict(cfg.train), "options": to_dict(options), "info": info,
            "cost": cost, "total_time_s": time.perf_counter() - start,
        })
    return cost
