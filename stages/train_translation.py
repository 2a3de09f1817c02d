"""Stage train_translation@<scheme>: train one positional scheme's encoder-decoder for every seed."""

import click
from _common import one_line_errors, params_option

from pelab.config import load_params
from pelab.translation_study import train_scheme


@click.command()
@params_option
@click.option("--scheme", required=True)
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, scheme: str, data_dir: str, out_dir: str) -> None:
    params = load_params(params_path)
    train_scheme(params, scheme, data_dir, out_dir, device=params.device)


if __name__ == "__main__":
    main()
