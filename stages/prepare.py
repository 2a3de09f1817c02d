"""Stage prepare@<task>: the task's data (the same for every scheme and seed)."""

from pathlib import Path

import click
from _common import one_line_errors, params_option, task_option

from pelab.config import load_params
from pelab.tasks import get_task


@click.command()
@params_option
@task_option
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, task_name: str, out_dir: str) -> None:
    params = load_params(params_path)
    get_task(task_name).prepare(params.task(task_name), Path(out_dir))
    click.echo(f"prepared {task_name} -> {out_dir}")


if __name__ == "__main__":
    main()
