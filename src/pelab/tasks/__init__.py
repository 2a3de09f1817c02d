"""The task registry, keyed by the name used in params (``tasks: [copy, translation]``) and in stage names.

Adding a task: a folder ``pelab/tasks/<name>/`` implementing ``pelab.tasks.base.Task``, one line in ``TASKS``
below, and its section ``<name>:`` in ``conf/`` (see docs/extending.md, "Adding a task").
"""

from __future__ import annotations

from pelab.tasks.base import Task
from pelab.tasks.copy.task import CopyTask
from pelab.tasks.length.task import LENGTH_TASKS
from pelab.tasks.lm.task import LMTask
from pelab.tasks.translation.task import TranslationTask

TASKS: dict[str, type[Task]] = {
    "copy": CopyTask,
    "translation": TranslationTask,
    # the length-generalisation study (pelab/tasks/length): each problem of data/problems.py as a bidirectional
    # encoder (<problem>), then as a decoder-only model (<problem>_causal)
    **LENGTH_TASKS,
    # the language-model study (pelab/tasks/lm): decoder-only on real text, perplexity and passkey by length
    "lm": LMTask,
}


def task_names() -> list[str]:
    return list(TASKS)


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid choices: {', '.join(task_names())}")
    return TASKS[name]()
