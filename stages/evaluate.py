"""Stage evaluate@<task>-<scheme>: score every seed's trained run with the task's evaluation.

Writes ``OUT/seed_<k>/`` per seed (records.jsonl and the task's files); OUT appears only when all are done.
"""

import time
from pathlib import Path

import click
from _common import one_line_errors, params_option, task_option

from pelab import io
from pelab.params import load_params
from pelab.runner.checkpoint import run_dir
from pelab.runner.evaluate import evaluate_run
from pelab.tasks import get_task


@click.command()
@params_option
@task_option
@click.option("--scheme", required=True)
@click.option("--runs", "runs_root", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, task_name: str, scheme: str, runs_root: str, data_dir: str, out_dir: str) -> None:
    params = load_params(params_path)
    task = get_task(task_name)
    data = task.load_data(Path(data_dir))
    with io.atomic_dir(out_dir) as tmp:
        for seed in params.seeds:
            run = run_dir(runs_root, task_name, scheme, seed)
            start = time.perf_counter()
            rows = evaluate_run(params, run, data_dir, Path(tmp) / f"seed_{seed}", data=data)
            shown = [r for r in rows if r["length"] == "all" and r["metric"] in task.headline.get(r["split"], [])][:4]
            click.echo(f"evaluated {task_name} {scheme} seed {seed}: "
                       + ", ".join(f"{r['split']} {r['metric']} {r['value']:.4g}" for r in shown)
                       + f" ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
