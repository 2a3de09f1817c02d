"""Stage report: figures and reports/report.md from the study (reports/study.json), the tuned ranking
(reports/tuning.json), records, curves, runs' metadata and weights, and the evaluation's captures; it runs no
model, reads no data and no task code."""

import time
from pathlib import Path

import click
from _common import one_line_errors, run_and_exit

from pelab.report.build import build_report
from pelab.report.study import Study


@click.command()
@click.option("--study", "study_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--records", "records_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--plots", "plots_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--runs", "runs_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--results", "results_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--tuning", "tuning_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--figures", "figures_dir", required=True, type=click.Path(file_okay=False))
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False))
@one_line_errors
def main(study_path: str, records_path: str, plots_dir: str, runs_dir: str, results_dir: str, tuning_path: str,
         figures_dir: str, out_path: str) -> None:
    start = time.perf_counter()
    build_report(Study.read(study_path), Path(records_path), Path(plots_dir), Path(runs_dir), Path(results_dir),
                 Path(figures_dir), Path(out_path), tuning_path=Path(tuning_path))
    click.echo(f"report -> {out_path}, figures -> {figures_dir} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    run_and_exit(main)
