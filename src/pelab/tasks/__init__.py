"""The task registry, keyed by the name used in params (``tasks: [copy, translation]``) and in stage names, found by
convention: every package ``pelab/tasks/<name>/`` with a ``task.py`` that defines ``TASKS`` (its name -> its
``pelab.tasks.base.Task`` class; the length package's holds every problem in both architectures). No file lists
every task, so adding one edits no file an existing run is trained from (``pelab.closure`` follows, from here, the
stage's own task's package only). Order: by package name, then as each package's ``TASKS`` lists them (nothing here
reads the studies: a study record's edit retrains nothing either).

Adding a task: a folder ``pelab/tasks/<name>/`` implementing ``pelab.tasks.base.Task`` with its ``TASKS`` in
``task.py``, and its section ``<name>:`` in ``conf/`` (see docs/extending.md, "Adding a task"). A plugin or a test may
add one to ``TASKS``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from pelab.tasks.base import Task

PACKAGES = Path(__file__).resolve().parent


def task_modules() -> list[str]:
    """``pelab.tasks.<name>.task`` of every task package, in the registry's order."""
    return [f"pelab.tasks.{p.name}.task" for p in sorted(PACKAGES.iterdir()) if (p / "task.py").exists()]


TASKS: dict[str, type[Task]] = {name: cls for module in task_modules()
                                for name, cls in importlib.import_module(module).TASKS.items()}


def task_names() -> list[str]:
    return list(TASKS)


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid choices: {', '.join(task_names())}")
    return TASKS[name]()
