"""Evaluate trained runs with their task's evaluation; write tidy records (and the task's files)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pelab import io
from pelab.device import device_name, pick_device, prepare_device
from pelab.params import Params
from pelab.probe import probe_rows
from pelab.runner.checkpoint import load_run, run_dir
from pelab.runner.recalibrate import recalibrated_rows
from pelab.tasks import get_task
from pelab.tasks.scoring import scoring


def evaluate_run(params: Params, run_path: str | Path, data_dir: str | Path, out_dir: str | Path,
                 device: str | None = None, data: Any = None) -> list[dict[str, Any]]:
    """Write ``out_dir/records.jsonl`` (tidy rows {task, pe, seed, split, length, metric, value}: the task's
    evaluation, then the probe's diagnostics, ``pelab.probe``) and the task's captures for the report
    (``probe.pt``, ``pelab.probe.captures``) on the device the run would train on; ``out_dir`` appears only when
    complete. Returns the rows.
    ``data``: the task's loaded data, to skip reloading it when evaluating several runs."""
    run = load_run(run_path)
    task, cfg = get_task(run.task), params.task(run.task)
    score = scoring(task)
    dev = pick_device(device or params.device)
    prepare_device(dev)
    data = task.load_data(Path(data_dir)) if data is None else data
    start = time.perf_counter()
    with io.atomic_dir(out_dir) as tmp, torch.no_grad():
        rows = score.evaluate(cfg, run.model.to(dev), data, dev, tmp)
        probe = score.probe(cfg, data)
        if probe is not None:
            rows += probe_rows(run.model, probe, dev)
        # on the CPU in float32 whatever the device (no TF32, no autocast): the report's figures and the numbers it
        # states from them are the same for a run evaluated on a GPU
        captures = score.captures(cfg, run.model.cpu(), data, torch.device("cpu"))
        if captures:
            torch.save(captures, tmp / io.PROBE_FILE)
        ident = {"task": run.task, "pe": run.scheme, "seed": run.seed}
        rows = [{**ident, **row} for row in rows]
        rows.append({**ident, "split": "eval", "length": "all", "metric": "eval_time_s",
                     "value": time.perf_counter() - start})
        io.write_jsonl(tmp / "records.jsonl", rows)
        io.write_json(tmp / "device.json", {"device": str(dev), "name": device_name(dev)})
    return rows



def evaluate_runs(params: Params, task_name: str, scheme: str, runs_root: str | Path, data_dir: str | Path,
                  out_dir: str | Path, seeds: Sequence[int] | None = None, echo=print,
                  recalibrated: bool = False) -> None:
    """Score each of ``seeds`` (default: params ``seeds``) of (``task_name``, ``scheme``) under ``runs_root`` into
    ``out_dir/seed_<k>/``, and with ``recalibrated`` the rows of its fine-tuned runs (``runner.recalibrate``) where the
    task has them (the run stage's; a tuning stage's runs are not fine-tuned); ``out_dir`` appears only when every seed
    is done. One line per seed through ``echo``."""
    task = get_task(task_name)
    data = task.load_data(Path(data_dir))
    tuned = recalibrated and bool(scoring(task).recalibrations(params.task(task_name), scheme))
    dev = pick_device(params.device) if tuned else None
    with io.atomic_dir(out_dir) as tmp:
        for seed in (params.seeds if seeds is None else seeds):
            start = time.perf_counter()
            run = run_dir(runs_root, task_name, scheme, seed)
            rows = evaluate_run(params, run, data_dir, Path(tmp) / f"seed_{seed}", data=data)
            if tuned:  # the fine-tuned runs' rows beside the run's (evaluate_run returns the rows it wrote)
                io.write_jsonl(Path(tmp) / f"seed_{seed}" / "records.jsonl",
                               rows + recalibrated_rows(params, runs_root, task_name, scheme, seed, data, dev))
            shown = [r for r in rows if r["length"] == "all" and r["metric"] in task.headline.get(r["split"], [])][:4]
            echo(f"evaluated {task_name} {scheme} seed {seed}: "
                 + ", ".join(f"{r['split']} {r['metric']} {r['value']:.4g}" for r in shown)
                 + f" ({time.perf_counter() - start:.1f} s)")
