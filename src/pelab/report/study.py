"""The study the report describes, read from ``reports/study.json`` (written by the aggregate stage from the
validated params, ``pelab.params.Params.to_dict``): the same names as ``Params`` — ``profile``, ``schemes``,
``tasks``, ``seeds``, ``reference``, every study's lists (``studies``), ``main_tasks`` and ``task(name)`` with its
``data``, ``model``, ``train`` and ``eval`` sections and ``options(scheme)`` — as plain data, so the report needs
no task code to know the study."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pelab.positional import scheme_options
from pelab.studies import StudyLists, StudyValues


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


class Study(StudyLists):
    def __init__(self, raw: dict[str, Any]) -> None:
        self.profile: str = raw["profile"]
        self.reference: str = raw["reference"]
        self.seeds: tuple[int, ...] = tuple(raw["seeds"])
        self.studies = {name: StudyValues(tuple(v["tasks"]), tuple(v["schemes"]),
                                          tuple((t, tuple(s)) for t, s in (v.get("task_schemes") or {}).items()))
                        for name, v in raw["studies"].items()}
        self.tune = _namespace(raw.get("tune") or {"scales": [1.0], "seed": 0, "tasks": []})
        self.task_configs = {name: TaskView(name, cfg) for name, cfg in raw["task_configs"].items()}
        # what each task says of itself (``Task.statement``, written by the aggregate stage): {task: {...}}
        self.statements: dict[str, dict[str, Any]] = dict(raw.get("task_statements") or {})

    @classmethod
    def read(cls, path: str | Path) -> Study:
        return cls(json.loads(Path(path).read_text()))
