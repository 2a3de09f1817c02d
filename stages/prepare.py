"""Stage prepare@<task>: the task's data (the same for every scheme and seed)."""

import time
from pathlib import Path

import click
from _common import one_line_errors, params_option, run_and_exit, task_option

from pelab.params import load_params
from pelab.tasks import get_task


@click.command()
@params_option
@task_option
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, task_name: str, out_dir: str) -> None:
    params = load_params(params_path)
    start = time.perf_counter()
    task = get_task(task_name)
    task.prepare(params.task(task_name), Path(out_dir))
    info = task.data_info(task.load_data(Path(out_dir)))
    sizes = ", ".join(f"{k} {v}" for k, v in info.items() if isinstance(v, (int, float)))
    click.echo(f"prepared {task_name} -> {out_dir}: {sizes} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    run_and_exit(main)
