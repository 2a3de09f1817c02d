"""The studies: their records (``STUDIES``: each study's params keys, task package and stage names, which the
pipeline, ``pelab parallel`` and the params read), and what the validated params (``pelab.params.Params``) and the
report's view of them (``pelab.report.study.Study``) share (``StudyLists``). Imports no task code, so the report can
use it."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class StudyRecord:
    """One study's record: what the pipeline (``pelab pipeline``), ``pelab parallel`` and the params read about it.

    A study is a list of tasks crossed with a list of schemes, each a params key: every task is one prepare stage,
    every (task, scheme) one run stage (its seeds trained, then scored), and every (task, scheme) of its tuned
    tasks one tune stage (the learning-rate sweep, the tuned runs, scored). A study whose runs are small
    (``per_scheme`` False) has one run and one tune stage per task instead, which runs every scheme of the study in
    one process: a stage costs 4-5 s that train nothing (Python, torch and DVC's bookkeeping), more than such a run
    trains at small sizes (``benchmarks/results/suite_time.md``). Each stage group lives in its own
    ``pipelines/<name>/<kind>/dvc.yaml``: DVC rewrites a stage's whole ``dvc.lock`` after every stage, so small lock
    files save time (``benchmarks/results/pipeline_files.md``)."""

    name: str
    tasks_key: str  # the params list of its tasks
    schemes_key: str  # the params list of its schemes (dotted)
    select: str  # the override that runs a subset of its schemes (`pe=[rope,t5]`: pe is a config group)
    tune_key: str  # the params list of its tuned tasks (a subset of tasks_key)
    package: str | None  # the task package (pelab/tasks/<package>) and params section every task shares; None:
    # each task is its own package and section
    suffix: str  # its stage groups: prepare<suffix>, run<suffix>, tune<suffix>
    corpora: tuple[str, ...] = ()  # folders of the repository its prepare stage reads
    per_scheme: bool = True  # one run and tune stage per (task, scheme); False: one per task, every scheme in it
    about: str = ""  # one line for the pipeline file's header

    def pipeline(self, kind: str) -> str:
        """The file of ``kind``'s stage group (``STAGE_KINDS``)."""
        return f"pipelines/{self.name}/{kind}/dvc.yaml"

    def stage(self, kind: str) -> str:
        """The stage group of ``kind`` (``STAGE_KINDS``)."""
        return f"{kind}{self.suffix}"

    def target(self, kind: str) -> str:
        """``kind``'s stage group as `dvc repro` and `dvc exp run` name it from the repository's root."""
        return f"{self.pipeline(kind)}:{self.stage(kind)}"

    def section(self, task: str = "${item.task}") -> str:
        """The params section ``task`` reads."""
        return self.package or task

    def owns(self, task_module: str) -> bool:
        """Whether the task whose class lives in ``task_module`` belongs to this study: a study with a package owns
        the tasks of ``pelab.tasks.<package>``, the main study every other (a task registered from outside
        ``pelab.tasks`` too)."""
        parts = task_module.split(".")
        folder = parts[2] if parts[:2] == ["pelab", "tasks"] and len(parts) > 2 else None
        packages = {s.package for s in STUDIES if s.package}
        return folder == self.package if self.package else folder not in packages

    def values(self, params: dict[str, Any], key: str) -> list[str]:
        """The list at dotted ``key`` of composed ``params`` ([] where absent)."""
        node: Any = params
        for part in key.split("."):
            node = (node or {}).get(part)
        return list(node or [])

    def schemes_in(self, params: dict[str, Any]) -> list[str]:
        """Its schemes in composed ``params``; [] when it has no task there (the study is off)."""
        return self.values(params, self.schemes_key) if self.values(params, self.tasks_key) else []


STUDIES = (
    StudyRecord("main", "tasks", "pe.schemes", "pe", "tune.tasks", None, "", corpora=("corpora",),
          about="the main study: copy and Multi30k translation, every scheme of `pe.schemes`"),
    StudyRecord("length", "length_tasks", "length_schemes", "length_schemes", "tune.length_tasks", "length", "_length",
          per_scheme=False,  # its runs are small: one stage per task
          about="the length-generalisation study (pelab/tasks/length): trained at lengths up to N, scored to 2N"),
    StudyRecord("lm", "lm_tasks", "lm_schemes", "lm_schemes", "tune.lm_tasks", "lm", "_lm", corpora=("corpora/lm",),
          about="the language-model study (pelab/tasks/lm): trained on real text at context L, scored at L..8L"),
)
STAGE_KINDS = ("prepare", "run", "tune")  # a task's data; a (task, scheme)'s (or task's) runs, scored; tuned, scored


def study_of(task_module: str) -> StudyRecord:
    """The study of the task whose class lives in ``task_module``."""
    return next(s for s in STUDIES if s.owns(task_module))
