"""Stage check: params.yaml checked once, before any other stage (every prepare stage reads its output), so bad
study input stops `dvc repro` and `dvc exp run` in one line naming the bad value and the valid choices
(``pelab.params.load_params``: every study's lists, each task's sections, every scheme's options), before any data
is prepared or any run trained. Its output never changes, so a params change that passes re-runs nothing
downstream of it. It also writes the records of what each scheme is trained from (``pelab.runner.scheme_records``), which the run and
tune stages depend on, and the records of the code each stage group runs (``pelab.pipeline.code_records``), which
every prepare, run and tune stage depends on in place of naming its files."""

from pathlib import Path

import click
import yaml
from _common import one_line_errors, params_option, run_and_exit

from pelab.compose import stale_items
from pelab.pipeline.code_records import write_code_records
from pelab.params import load_params
from pelab.runner.scheme_records import write_scheme_records
from pelab.tasks import get_task

CHECKED = "params.yaml passed pelab's checks (stages/check.py)\n"


@click.command()
@params_option
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False))
@click.option("--schemes", "schemes_dir", required=True, type=click.Path(file_okay=False),
              help="where each study with a stage per task gets the record of its schemes (runner.scheme_records)")
@click.option("--code", "code_dir", required=True, type=click.Path(file_okay=False),
              help="where each stage group's record of its code goes, per task (pipeline.code_records)")
@one_line_errors
def main(params_path: str, out_path: str, schemes_dir: str, code_dir: str) -> None:
    params = load_params(params_path)
    raw = yaml.safe_load(Path(params_path).read_text())
    stale = stale_items(raw)
    if stale:
        raise ValueError(f"{params_path}'s {', '.join(stale)} no longer match its lists and options (edited by hand?): "
                         "recompose it, `pelab compose <overrides> --out params.yaml`, or set values with "
                         "`dvc exp run -S`")
    for task in params.tasks:  # what prepare will read beside params (a corpus folder)
        get_task(task).check_inputs(params.task(task))
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text() != CHECKED:
        out.write_text(CHECKED)
    write_scheme_records(params, raw, schemes_dir)
    write_code_records(code_dir, Path.cwd())  # the repository DVC runs the stage in (its wdir)
    studies = ", ".join(f"{task} x {len(params.schemes_of(task))} schemes" for task in params.tasks)
    click.echo(f"checked {params_path}: {studies or 'no task'}, seeds {list(params.seeds)}")


if __name__ == "__main__":
    run_and_exit(main)
