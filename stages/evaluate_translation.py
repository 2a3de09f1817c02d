"""Stage evaluate_translation@<scheme>: greedy and beam translations scored with sacreBLEU, chrF and NLTK."""

import click
from _common import one_line_errors, params_option

from pelab.config import load_params
from pelab.translation_study import evaluate_scheme


@click.command()
@params_option
@click.option("--scheme", required=True)
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--runs", "run_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, scheme: str, data_dir: str, run_dir: str, out_dir: str) -> None:
    evaluate_scheme(load_params(params_path), scheme, data_dir, run_dir, out_dir)


if __name__ == "__main__":
    main()
