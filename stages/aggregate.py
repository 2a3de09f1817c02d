"""Stage aggregate: tidy records of the schemes in params -> metrics.json, records.csv, plot data."""

from pathlib import Path

import click
from _common import one_line_errors, params_option

from pelab.aggregate import aggregate
from pelab.config import load_params


@click.command()
@params_option
@click.option("--results", "results", multiple=True, required=True, help="TASK=DIR, once per task")
@click.option("--metrics", "metrics_path", required=True, type=click.Path(dir_okay=False))
@click.option("--records", "records_path", required=True, type=click.Path(dir_okay=False))
@click.option("--plots", "plots_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, results: tuple[str, ...], metrics_path: str, records_path: str, plots_dir: str) -> None:
    dirs = {}
    for item in results:
        task, sep, path = item.partition("=")
        if not sep:
            raise ValueError(f"--results takes TASK=DIR, got {item!r}")
        dirs[task] = Path(path)
    aggregate(load_params(params_path), dirs, Path(metrics_path), Path(records_path), Path(plots_dir))


if __name__ == "__main__":
    main()
