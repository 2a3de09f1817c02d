"""Stages run@<task>-<scheme> (run_lm@…) and run_length@<task>: train the runs of a (task, scheme), or of a task's
every scheme one scheme after another (atomically: a killed stage leaves no partial run behind), then, with
``--results``, score them (``pelab.runner.evaluate.evaluate_runs``: ``RESULTS/<task>/<scheme>/seed_<k>/``). One
process does both, so the pipeline pays one start and one DVC record per stage; a change that only evaluation reads
re-runs the stage, which restores every kept run and scores it again.

Without ``--seed``, every seed of params ``seeds`` is trained, together as one vectorised model where the task
allows it and it pays (``pelab.runner.train.train_runs``), else one after another. Each run lands in
``RUNS/<task>/<scheme>/seed_<k>`` and its live curves in ``LIVE/<task>/<scheme>/seed_<k>``. Finished runs are
also kept in ``KEPT/<task>/<scheme>/`` (``pelab.runner.kept_runs``): a seed trained before from the same inputs
is not trained again (adding a seed trains only that seed), and a killed stage continues from the state the
training in progress saves there. Where the task recalibrates the scheme (the LM's ``lm.eval.recalibrate``), each
run is then fine-tuned with each method (``pelab.runner.recalibrate``: ``RUNS/<task>/<scheme>/recalibrated/``, kept
the same way) and scored beside it.
"""

from pathlib import Path

import click
from _common import one_line_errors, params_option, run_and_exit, study_schemes, task_option

from pelab.params import load_params
from pelab.runner.checkpoint import run_dir
from pelab.runner.evaluate import evaluate_runs
from pelab.runner.recalibrate import recalibrate_runs
from pelab.runner.train import train_runs


@click.command()
@params_option
@task_option
@click.option("--scheme", "schemes", multiple=True,
              help="a scheme to run (repeatable); default: every scheme of the task's study in params")
@click.option("--seed", "seeds", type=int, multiple=True, help="seeds to train (repeatable); default: params seeds")
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--runs", "runs_root", required=True, type=click.Path(file_okay=False), help="the runs folder")
@click.option("--live", "live_root", default=None, type=click.Path(file_okay=False),
              help="the DVCLive folder for the training curves, written as they are logged")
@click.option("--kept", "kept_root", default=".kept", show_default=True, envvar="PELAB_KEPT",
              type=click.Path(file_okay=False),
              help="where finished runs are kept and the training in progress saves its state (env PELAB_KEPT)")
@click.option("--save-every", "save_every_s", default=300.0, show_default=True, type=click.FloatRange(min=1.0),
              help="seconds between saves of the state of the training in progress")
@click.option("--results", "results_dir", default=None, type=click.Path(file_okay=False),
              help="score the runs into RESULTS/<task>/<scheme>/ after training (the run stage); default: train only")
@click.option("--stack/--sequential", "stack", default=None,
              help="seeds together as one vectorised model, or one after another [default: together on CUDA; on "
                   "the CPU for tasks whose batches need no padding]")
@one_line_errors
def main(params_path: str, task_name: str, schemes: tuple[str, ...], seeds: tuple[int, ...], data_dir: str,
         runs_root: str, live_root: str | None, kept_root: str, save_every_s: float, results_dir: str | None,
         stack: bool | None) -> None:
    params = load_params(params_path)
    schemes = study_schemes(params, task_name, schemes)
    seeds = seeds or tuple(params.seeds)
    for scheme in schemes:
        outs = [run_dir(runs_root, task_name, scheme, seed) for seed in seeds]
        lives = None if live_root is None else [run_dir(live_root, task_name, scheme, seed) for seed in seeds]
        costs = train_runs(params, task_name, scheme, seeds, data_dir, outs, live_dirs=lives, stack=stack,
                           kept=Path(kept_root) / task_name / scheme, save_every_s=save_every_s)
        for seed, cost in zip(seeds, costs):
            together = f", {cost['seeds_together']} seeds together" if cost["seeds_together"] > 1 else ""
            click.echo(f"trained {task_name} {scheme} seed {seed}: final loss {cost['final_loss']:.4f}, "
                       f"{cost['wall_time_s']:.1f} s on {cost['device']}{together}")
        recalibrate_runs(params, task_name, scheme, seeds, data_dir, runs_root,
                         kept=Path(kept_root) / task_name / scheme, save_every_s=save_every_s, echo=click.echo)
        if results_dir is not None:
            evaluate_runs(params, task_name, scheme, runs_root, data_dir, Path(results_dir) / task_name / scheme,
                          seeds, echo=click.echo, recalibrated=True)


if __name__ == "__main__":
    run_and_exit(main)
