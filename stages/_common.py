"""Shared option for the stage scripts: where params.yaml lives, and one-line errors."""

from __future__ import annotations

import functools
import sys

import click

params_option = click.option(
    "--params", "params_path", default="params.yaml", show_default=True, type=click.Path(exists=True, dir_okay=False)
)


def one_line_errors(fn):
    """Turn a ValueError/FileNotFoundError into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ValueError, FileNotFoundError) as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(2)

    return wrapper
