"""Shared options of the stage scripts: where params.yaml lives, the task choice, one-line errors."""

from __future__ import annotations

import click

from pelab.errors import one_line_errors  # noqa: F401  (re-exported for the stage scripts)

params_option = click.option(
    "--params", "params_path", default="params.yaml", show_default=True, type=click.Path(exists=True, dir_okay=False)
)
task_option = click.option("--task", "task_name", required=True, help="a registered task (pelab.tasks)")
