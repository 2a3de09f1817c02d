"""Shared options of the stage scripts: where params.yaml lives, the task choice, one-line errors."""

from __future__ import annotations

import click

from pelab.errors import one_line_errors  # noqa: F401  (re-exported for the stage scripts)
from pelab.exit import run_and_exit  # noqa: F401  (likewise: each script's entry, without Python's teardown)

params_option = click.option(
    "--params", "params_path", default="params.yaml", show_default=True, type=click.Path(exists=True, dir_okay=False)
)
task_option = click.option("--task", "task_name", required=True, help="a registered task (pelab.tasks)")


def study_schemes(params, task: str, chosen: tuple[str, ...]) -> tuple[str, ...]:
    """``chosen`` (default: every scheme ``task`` is run with in ``params``), each of which must be one of those: a
    scheme outside the study's list would run without the options params give it."""
    schemes = params.schemes_of(task)
    outside = [s for s in chosen if s not in schemes]
    if outside:
        raise ValueError(f"scheme {outside[0]!r} is not in the {task} study's list; valid choices: "
                         f"{', '.join(schemes)}")
    return chosen or schemes
