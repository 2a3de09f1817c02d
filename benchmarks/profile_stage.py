"""Where a real training stage spends its time: the train stage's own code (``runner.train.train_runs``) for a
few steps under cProfile, with the params of a profile.

    python benchmarks/profile_stage.py --params params.yaml --task copy --scheme rope [--steps 200] [--rows 30]

Prints the steps per second and the functions with the most cumulative time. Runs (weights, curves) go to a
temporary folder and are discarded.
"""

from __future__ import annotations

import cProfile
import dataclasses
import pstats
import tempfile
import time
from pathlib import Path

import click

from pelab.params import load_params
from pelab.runner.train import train_runs


@click.command()
@click.option("--params", "params_path", default="params.yaml", show_default=True)
@click.option("--task", "task_name", required=True)
@click.option("--scheme", required=True)
@click.option("--data", "data_dir", default=None, help="prepared data (default data/<task>)")
@click.option("--steps", default=200, show_default=True)
@click.option("--rows", default=30, show_default=True)
def main(params_path: str, task_name: str, scheme: str, data_dir: str | None, steps: int, rows: int) -> None:
    params = load_params(params_path)
    cfg = params.task(task_name)
    short = dataclasses.replace(cfg.train, steps=steps, warmup_steps=min(cfg.train.warmup_steps, steps))
    params = dataclasses.replace(params, task_configs={**params.task_configs,
                                                       task_name: dataclasses.replace(cfg, train=short)})
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"seed_{k}" for k in params.seeds]
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        train_runs(params, task_name, scheme, params.seeds, data_dir or f"data/{task_name}", outs)
        profiler.disable()
        seconds = time.perf_counter() - start
    click.echo(f"{task_name} {scheme}: {steps} steps of {len(params.seeds)} seeds in {seconds:.1f} s "
               f"({steps / seconds:.1f} steps/s, set-up included)")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(rows)


if __name__ == "__main__":
    main()
