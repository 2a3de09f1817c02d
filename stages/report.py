"""Stage report: figures and reports/report.md from records, curves and saved runs."""

import time
from pathlib import Path

import click
from _common import one_line_errors, params_option

from pelab.params import load_params
from pelab.report.build import build_report


@click.command()
@params_option
@click.option("--records", "records_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--plots", "plots_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--runs", "runs_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--results", "results_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--figures", "figures_dir", required=True, type=click.Path(file_okay=False))
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False))
@one_line_errors
def main(params_path: str, records_path: str, plots_dir: str, runs_dir: str, results_dir: str, data_dir: str,
         figures_dir: str, out_path: str) -> None:
    start = time.perf_counter()
    build_report(load_params(params_path, check_cuda=False), Path(records_path), Path(plots_dir), Path(runs_dir),
                 Path(figures_dir), Path(out_path), results_dir=Path(results_dir), data_dir=Path(data_dir))
    click.echo(f"report -> {out_path}, figures -> {figures_dir} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
