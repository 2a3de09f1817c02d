"""Stage aggregate: training and evaluation records of this study's runs -> one table, the headline (the
claims' verdicts and each task's ranking metric: what `dvc metrics` reads), the key metrics (one small file per task
and scheme), a summary of every headline statistic, plot data, and the study's
params as plain data for the report (reports/study.json), and the ranking at shared and tuned learning rates
(reports/tuning.json)."""

from pathlib import Path

import click
from _common import one_line_errors, params_option, run_and_exit

from pelab.aggregate import aggregate
from pelab.params import load_params


@click.command()
@params_option
@click.option("--runs", "runs_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--results", "results_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--metrics", "metrics_dir", required=True, type=click.Path(file_okay=False))
@click.option("--summary", "summary_path", required=True, type=click.Path(dir_okay=False))
@click.option("--records", "records_path", required=True, type=click.Path(dir_okay=False))
@click.option("--plots", "plots_dir", required=True, type=click.Path(file_okay=False))
@click.option("--study", "study_path", required=True, type=click.Path(dir_okay=False))
@click.option("--tuning", "tuning_path", required=True, type=click.Path(dir_okay=False))
@click.option("--headline", "headline_path", required=True, type=click.Path(dir_okay=False))
@one_line_errors
def main(params_path: str, runs_dir: str, results_dir: str, metrics_dir: str, summary_path: str,
         records_path: str, plots_dir: str, study_path: str, tuning_path: str, headline_path: str) -> None:
    aggregate(load_params(params_path, check_cuda=False), Path(runs_dir), Path(results_dir), Path(metrics_dir),
              Path(summary_path), Path(records_path), Path(plots_dir), Path(study_path),
              Path(tuning_path), Path(headline_path))


if __name__ == "__main__":
    run_and_exit(main)
