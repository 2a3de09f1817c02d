"""Stage prepare_translation: verified corpus -> joint fr+en tokenizer and filtered token-id splits (Arrow)."""

import click
from _common import one_line_errors, params_option

from pelab.config import load_params
from pelab.tasks.translation_data import prepare


@click.command()
@params_option
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@one_line_errors
def main(params_path: str, out_dir: str) -> None:
    prepare(load_params(params_path).translation, out_dir)


if __name__ == "__main__":
    main()
