"""The task registry, keyed by the name used in params (``tasks: [copy, translation]``) and in stage names.

Adding a task: a folder ``pelab/tasks/<name>/`` implementing ``pelab.tasks.base.Task``, one line in
``_BUILDERS`` below, and its section ``<name>:`` in ``conf/`` (see README, "Adding a task"). Tasks are
imported on first use, so listing the registry does not import torch models or data libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pelab.tasks.base import Task

# name -> "module:Class" of its Task subclass
_BUILDERS: dict[str, str] = {
    "copy": "pelab.tasks.copy.task:CopyTask",
    "translation": "pelab.tasks.translation.task:TranslationTask",
    # the length-generalisation study (pelab/tasks/length): bidirectional encoder, then causal decoder-only
    "reverse": "pelab.tasks.length.task:ReverseTask",
    "duplicate": "pelab.tasks.length.task:DuplicateTask",
    "addition": "pelab.tasks.length.task:AdditionTask",
    "reverse_causal": "pelab.tasks.length.task:ReverseCausalTask",
    "duplicate_causal": "pelab.tasks.length.task:DuplicateCausalTask",
    "addition_causal": "pelab.tasks.length.task:AdditionCausalTask",
}
_INSTANCES: dict[str, Task] = {}


def task_names() -> list[str]:
    return list(_BUILDERS)


def register_task(name: str, target: str) -> None:
    """Register ``module:Class`` under ``name`` (tests use it for a tiny task)."""
    _BUILDERS[name] = target
    _INSTANCES.pop(name, None)


def get_task(name: str) -> Task:
    if name not in _BUILDERS:
        raise ValueError(f"unknown task {name!r}; valid choices: {', '.join(task_names())}")
    if name not in _INSTANCES:
        module, _, cls = _BUILDERS[name].partition(":")
        _INSTANCES[name] = getattr(importlib.import_module(module), cls)()
    return _INSTANCES[name]
