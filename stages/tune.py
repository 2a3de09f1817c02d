"""Stages tune@<task>-<scheme> (tune_lm@…) and tune_length@<task> (every scheme of the task, one after another):
the scheme's own learning rate, chosen on validation only (``pelab.runner.tune``): seed ``tune.seed`` trains at
each of ``tune.scales`` times the task's rate on the task's tuning data into ``SWEEPS/<task>/<scheme>/x<scale>/``,
the choice lands in ``SWEEPS/<task>/<scheme>/choice.json``, and every seed trains at the chosen rate into
``RUNS/<task>/<scheme>/seed_<k>`` (with ``--results``, then scored into ``RESULTS/<task>/<scheme>/seed_<k>/``). Runs
are kept under ``KEPT/<task>/<scheme>/`` like the run stage's.
"""

from pathlib import Path

import click
from _common import one_line_errors, params_option, run_and_exit, study_schemes, task_option

from pelab.params import load_params
from pelab.runner.checkpoint import run_dir
from pelab.runner.evaluate import evaluate_runs
from pelab.runner.tune import tune_runs


@click.command()
@params_option
@task_option
@click.option("--scheme", "schemes", multiple=True,
              help="a scheme to tune (repeatable); default: every scheme of the task's study in params")
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--runs", "runs_root", required=True, type=click.Path(file_okay=False),
              help="the tuned runs' folder (runs/tuned)")
@click.option("--sweeps", "sweeps_root", required=True, type=click.Path(file_okay=False),
              help="the sweeps' folder (runs/sweep)")
@click.option("--kept", "kept_root", default=".kept", show_default=True, envvar="PELAB_KEPT",
              type=click.Path(file_okay=False),
              help="where finished runs are kept (the run stage's folder; env PELAB_KEPT)")
@click.option("--results", "results_dir", default=None, type=click.Path(file_okay=False),
              help="score the tuned runs into RESULTS/<task>/<scheme>/ (the tune stage); default: tune only")
@one_line_errors
def main(params_path: str, task_name: str, schemes: tuple[str, ...], data_dir: str, runs_root: str, sweeps_root: str,
         kept_root: str, results_dir: str | None) -> None:
    params = load_params(params_path)
    if task_name not in params.tune.tasks:
        raise ValueError(f"task {task_name!r} is not tuned; tune lists: {', '.join(params.tune.tasks) or '(none)'}")
    for scheme in study_schemes(params, task_name, schemes):
        outs = [run_dir(runs_root, task_name, scheme, seed) for seed in params.seeds]
        choice = tune_runs(params, task_name, scheme, data_dir, Path(sweeps_root) / task_name / scheme, outs,
                           kept=Path(kept_root) / task_name / scheme)
        losses = ", ".join(f"{name} {loss:.4f}" for name, loss in choice["val_loss"].items())
        click.echo(f"tuned {task_name} {scheme}: validation loss {losses}; lr {choice['chosen_lr']:g} "
                   f"({choice['chosen_scale']:g} x {choice['shared_lr']:g}) for seeds {list(params.seeds)}")
        if results_dir is not None:
            evaluate_runs(params, task_name, scheme, runs_root, data_dir, Path(results_dir) / task_name / scheme,
                          echo=click.echo)


if __name__ == "__main__":
    run_and_exit(main)
