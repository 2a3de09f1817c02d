"""Score every seed's trained run of a (task, scheme) with the task's evaluation (``pelab.runner.evaluate``), outside
the pipeline: the run stage (stages/run.py) trains and then does this.

Writes ``OUT/seed_<k>/`` per seed (records.jsonl and the task's files); OUT appears only when all are done.
"""

import click
from _common import one_line_errors, params_option, task_option

from pelab.params import load_params
from pelab.runner.evaluate import evaluate_runs


@click.command()
@params_option
@task_option
@click.option("--scheme", required=True)
@click.option("--runs", "runs_root", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, task_name: str, scheme: str, runs_root: str, data_dir: str, out_dir: str) -> None:
    evaluate_runs(load_params(params_path), task_name, scheme, runs_root, data_dir, out_dir, echo=click.echo)


if __name__ == "__main__":
    main()
