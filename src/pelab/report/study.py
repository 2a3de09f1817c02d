"""The study the report describes, read from ``reports/study.json`` (written by the aggregate stage from the
validated params, ``pelab.params.Params.to_dict``): the same names as ``Params`` — ``profile``, ``schemes``,
``tasks``, ``seeds``, ``reference``, the length and LM studies' lists, ``main_tasks`` and ``task(name)`` with its
``data``, ``model``, ``train`` and ``eval`` sections and ``options(scheme)`` — as plain data, so the report needs
no task code to know the study."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pelab.positional import scheme_options


def _namespace(value: Any) -> Any:
    """Nested mappings as attribute access (``cfg.eval.decode.beam_size``), lists kept."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    return value


class TaskView:
    """One task's resolved sections, as the study ran them."""

    def __init__(self, name: str, raw: dict[str, Any]) -> None:
        self.name = name
        self.data, self.model, self.train, self.eval = (_namespace(raw[s]) for s in ("data", "model", "train", "eval"))
        self._positional = dict(raw.get("positional") or {})

    def options(self, scheme: str) -> Any:
        """The scheme's validated ``Options`` for this task (its defaults where the study did not set them)."""
        return scheme_options(scheme, self._positional.get(scheme))


class Study:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.profile: str = raw["profile"]
        self.schemes = tuple(raw["schemes"])
        self.tasks = tuple(raw["tasks"])
        self.seeds = tuple(raw["seeds"])
        self.reference: str = raw["reference"]
        self.length_tasks = tuple(raw["length_tasks"])
        self.length_schemes = tuple(raw["length_schemes"])
        self.lm_tasks = tuple(raw["lm_tasks"])
        self.lm_schemes = tuple(raw["lm_schemes"])
        self.tune = _namespace(raw.get("tune") or {"scales": [1.0], "seed": 0, "tasks": []})
        self._tasks = {name: TaskView(name, cfg) for name, cfg in raw["task_configs"].items()}

    @classmethod
    def read(cls, path: str | Path) -> Study:
        return cls(json.loads(Path(path).read_text()))

    def schemes_of(self, task: str) -> tuple[str, ...]:
        if task in self.length_tasks:
            return self.length_schemes
        return self.lm_schemes if task in self.lm_tasks else self.schemes

    @property
    def main_tasks(self) -> tuple[str, ...]:
        return tuple(t for t in self.tasks if t not in self.length_tasks and t not in self.lm_tasks)

    def task(self, name: str) -> TaskView:
        if name not in self._tasks:
            raise ValueError(f"task {name!r} is not in this study's tasks; valid choices: {', '.join(self.tasks)}")
        return self._tasks[name]
