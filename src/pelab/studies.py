"""What the validated params (``pelab.params.Params``) and the report's view of them (``pelab.report.study.Study``)
share: which schemes run a task, the main tasks, one task's configuration. Reads only the lists a study is made of,
so the report can use it without importing task code."""

from __future__ import annotations

from typing import Any


class StudyLists:
    """Needs ``schemes``, ``tasks``, ``length_tasks``, ``length_schemes``, ``lm_tasks``, ``lm_schemes`` and
    ``task_configs`` ({task: its configuration})."""

    schemes: tuple[str, ...]
    tasks: tuple[str, ...]
    length_tasks: tuple[str, ...]
    length_schemes: tuple[str, ...]
    lm_tasks: tuple[str, ...]
    lm_schemes: tuple[str, ...]
    task_configs: dict[str, Any]

    def schemes_of(self, task: str) -> tuple[str, ...]:
        """The schemes ``task`` is run with: ``length_schemes`` for the length study, ``lm_schemes`` for the LM
        study, else ``pe.schemes``."""
        if task in self.length_tasks:
            return self.length_schemes
        return self.lm_schemes if task in self.lm_tasks else self.schemes

    @property
    def main_tasks(self) -> tuple[str, ...]:
        return tuple(t for t in self.tasks if t not in self.length_tasks and t not in self.lm_tasks)

    def task(self, name: str) -> Any:
        if name not in self.task_configs:
            raise ValueError(f"task {name!r} is not in this study's tasks; valid choices: {', '.join(self.tasks)}")
        return self.task_configs[name]
