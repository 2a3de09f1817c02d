"""Shared options of the stage scripts: where params.yaml lives, the task choice, one-line errors.

Every stage script imports this module before pelab's heavy modules, so importing it is where a stage command is
handed to a warm process (``pelab.forkserver``): when the script runs as a command and a server serves this code,
the command ends here with the stage's status, the stage having run in the server's fork.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pelab.forkserver import hand_over

_main = sys.modules.get("__main__")
if Path(getattr(_main, "__file__", "") or ".").resolve().parent == Path(__file__).resolve().parent:
    hand_over("__main__", _main.__file__)  # a stage script of this folder, run as a command

import click  # noqa: E402

from pelab.errors import one_line_errors  # noqa: E402, F401  (re-exported for the stage scripts)
from pelab.exit import run_and_exit  # noqa: E402, F401  (likewise: each script's entry, without Python's teardown)

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
