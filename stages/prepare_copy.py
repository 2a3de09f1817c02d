"""Stage prepare_copy: one copy-task dataset per seed (train, held-out test, longer test)."""

import click
from _common import one_line_errors, params_option

from pelab.config import load_params
from pelab.copy_study import prepare


@click.command()
@params_option
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, out_dir: str) -> None:
    prepare(load_params(params_path), out_dir)


if __name__ == "__main__":
    main()
