"""The studies: their records (``STUDIES``: each study's params keys, task package and stage names, which the
pipeline, ``pelab parallel`` and the params read), and what the validated params (``pelab.params.Params``) and the
report's view of them (``pelab.report.study.Study``) share (``StudyLists``). Imports no task code, so the report can
use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StudyValues:
    """One study's lists as params give them: its tasks and the schemes each of them runs."""

    tasks: tuple[str, ...] = ()
    schemes: tuple[str, ...] = ()
    # (task, its schemes) for each task run with a list of its own in place of ``schemes`` (a profile's window on a
    # task: the quick profile runs CoPE's task with the schemes its paper compares only)
    task_schemes: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def schemes_of(self, task: str) -> tuple[str, ...]:
        return dict(self.task_schemes).get(task, self.schemes)


class StudyLists:
    """Needs ``studies`` ({record name: ``StudyValues``}, in the order of ``STUDIES``) and ``task_configs`` ({task:
    its configuration}). Every reader of a study's lists goes through here, looping over the records' names."""

    studies: dict[str, StudyValues]
    task_configs: dict[str, Any]

    @property
    def tasks(self) -> tuple[str, ...]:
        """Every study's tasks, in record order."""
        return tuple(task for values in self.studies.values() for task in values.tasks)

    @property
    def schemes(self) -> tuple[str, ...]:
        """The main study's schemes (params ``pe.schemes``)."""
        return self.studies[STUDIES[0].name].schemes

    @property
    def main_tasks(self) -> tuple[str, ...]:
        return self.tasks_of(STUDIES[0].name)

    def tasks_of(self, study: str) -> tuple[str, ...]:
        """The tasks of the study named ``study`` (() where params leave it out)."""
        return self.studies.get(study, StudyValues()).tasks

    def home_of(self, task: str) -> str:
        """The name of the study that lists ``task``."""
        for name, values in self.studies.items():
            if task in values.tasks:
                return name
        raise ValueError(f"task {task!r} is in no study's list; valid choices: {', '.join(self.tasks)}")

    def schemes_of(self, task: str) -> tuple[str, ...]:
        """The schemes ``task`` is run with: its own list where its study gives it one, else its study's."""
        return self.studies[self.home_of(task)].schemes_of(task)

    def with_study_schemes(self, study: str) -> tuple[str, ...]:
        """The tasks of ``study`` run with its whole list of schemes (those a ranking across its tasks compares)."""
        values = self.studies.get(study, StudyValues())
        return tuple(t for t in values.tasks if values.schemes_of(t) == values.schemes)

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
    # the params keys below follow from the name (``<name>_tasks``, ``<name>_schemes``, ``tune.<name>_tasks``, stage
    # groups ``prepare_<name>``, …); a record sets one only to differ (the main study keeps the reference documents'
    # ``tasks`` and ``pe.schemes``)
    tasks_key: str = ""  # the params list of its tasks
    schemes_key: str = ""  # the params list of its schemes (dotted)
    select: str = ""  # the override that runs a subset of its schemes (`pe=[rope,t5]`: pe is a config group)
    tune_key: str = ""  # the params list of its tuned tasks (a subset of tasks_key)
    # the params mapping {task: its schemes} of the tasks run with a list of their own (`length_task_schemes`): in place
    # of the study's list where a stage runs every scheme of a task; where a stage runs one (task, scheme), the schemes
    # of the study's list the task runs (`main_task_schemes`: a filter, so `-S pe=alibi` still selects). None (the
    # default there): every task crosses every scheme (a DVC matrix)
    task_schemes_key: str | None = ""
    package: str | None = ""  # its tasks' package (pelab/tasks/<package>, or a top-level package of that name) and
    # the params section every task shares, default: the name; None: each task is its own package and section
    suffix: str | None = None  # its stage groups: prepare<suffix>, run<suffix>, tune<suffix>
    corpora: tuple[str, ...] = ()  # folders of the repository its prepare stage reads
    per_scheme: bool = True  # one run and tune stage per (task, scheme); False: one per task, every scheme in it
    title: str = ""  # how the report's header names it ("length study"); "" for the main study
    about: str = ""  # one line for the pipeline file's header

    def __post_init__(self) -> None:
        derived = {"tasks_key": f"{self.name}_tasks", "schemes_key": f"{self.name}_schemes",
                   "tune_key": f"tune.{self.name}_tasks", "package": self.name,
                   "task_schemes_key": None if self.per_scheme else f"{self.name}_task_schemes"}
        for key, value in derived.items():
            if getattr(self, key) == "":
                object.__setattr__(self, key, value)
        if not self.select:
            object.__setattr__(self, "select", self.schemes_key)
        if self.suffix is None:
            object.__setattr__(self, "suffix", f"_{self.name}")

    @property
    def runs_key(self) -> str | None:
        """The params mapping {"<task>-<scheme>": {task, scheme, module, options?}} of a study with a stage per (task,
        scheme) (composed by ``pelab.compose.study_runs``; its run stages are a DVC foreach over it, run@<task>-<scheme>,
        each depending on its own item); None for the others."""
        return f"{self.name}_runs" if self.per_scheme else None

    @property
    def tuned_runs_key(self) -> str | None:
        """Likewise for its tune stages: the items of its tuned tasks (``tune_key``)."""
        return f"{self.name}_tuned_runs" if self.per_scheme else None

    def own_schemes(self, schemes: tuple[str, ...], own: tuple[str, ...]) -> tuple[str, ...]:
        """The schemes a task with its own list ``own`` runs, given the study's ``schemes``: ``own`` in place of them
        (a stage per task), or those of them ``own`` names (a stage per (task, scheme): a filter)."""
        return tuple(s for s in schemes if s in own) if self.per_scheme else own

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
        the tasks of ``pelab.tasks.<package>`` or of a top-level package ``<package>`` (a plugin's, the tests'; so a
        plugin package named like a study, ``lm``, joins it), the main study every other."""
        parts = task_module.split(".")
        folder = (parts[2] if len(parts) > 2 else None) if parts[:2] == ["pelab", "tasks"] else parts[0]
        packages = {s.package for s in STUDIES if s.package}
        return folder == self.package if self.package else folder not in packages

    def values(self, params: dict[str, Any], key: str) -> list[str]:
        """The list at dotted ``key`` of composed ``params`` ([] where absent); one line where it is not a list."""
        node: Any = params
        for part in key.split("."):
            node = (node or {}).get(part) if isinstance(node or {}, dict) else None
        return as_list(key, node)

    def task_schemes_in(self, params: dict[str, Any]) -> dict[str, list[str]]:
        """{task: its own schemes} in composed ``params`` ({} where absent); one line where it is not such a mapping, or
        where the study has a stage per (task, scheme) and cannot give a task a list of its own."""
        key = self.task_schemes_key or f"{self.name}_task_schemes"
        node = params.get(key)
        if self.task_schemes_key is None:
            if node:
                raise ValueError(f"{key} is not read: the {self.name} study runs every task with every scheme of "
                                 f"{self.schemes_key}; set that list instead")
            return {}
        if node is not None and not isinstance(node, dict):
            raise ValueError(f"{key} must map a task to its schemes, e.g. '+{key}.count_causal=[rope,cope]', "
                             f"got {node!r}")
        return {str(task): as_list(f"{key}.{task}", schemes) for task, schemes in (node or {}).items()}

    def schemes_in(self, params: dict[str, Any]) -> list[str]:
        """Its schemes in composed ``params``; [] when it has no task there (the study is off)."""
        return self.values(params, self.schemes_key) if self.values(params, self.tasks_key) else []

    @staticmethod
    def set(params: dict[str, Any], key: str, value: list[str]) -> None:
        """Set the list at dotted ``key`` of raw ``params`` to ``value`` (in place; a null parent becomes {})."""
        *parents, last = key.split(".")
        node = params
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[last] = list(value)


# The studies, in order (the first is the main study). A new study is one record here (its keys follow from its name),
# a task package, and its lists and section in conf/ (docs/extending.md, "Adding a study"); a test or plugin may
# append one.
STUDIES: list[StudyRecord] = [
    StudyRecord("main", tasks_key="tasks", schemes_key="pe.schemes", select="pe", tune_key="tune.tasks",
                task_schemes_key="main_task_schemes", package=None, suffix="", corpora=("corpora",),
                about="the main study: copy and Multi30k translation, every scheme of `pe.schemes`"),
    StudyRecord("length", per_scheme=False,  # its runs are small: one stage per task
                title="length study",
                about="the length-generalisation study (pelab/tasks/length): trained at lengths up to N, scored to 2N"),
    StudyRecord("lm", corpora=("corpora/lm",), title="LM study",
                about="the language-model study (pelab/tasks/lm): trained on real text at context L, scored at L..8L"),
]
STAGE_KINDS = ("prepare", "run", "tune")  # a task's data; a (task, scheme)'s (or task's) runs, scored; tuned, scored


def as_list(key: str, node: Any) -> list[str]:
    """``node``, the value at params ``key``, as a list ([] for null); one line where it is not a list."""
    if node is not None and not isinstance(node, (list, tuple)):
        raise ValueError(f"{key} must be a list, e.g. '{key}=[{node}]', got {node!r}")
    return list(node or [])


def study_of(task_module: str) -> StudyRecord:
    """The study of the task whose class lives in ``task_module``."""
    return next(s for s in STUDIES if s.owns(task_module))


def record(name: str) -> StudyRecord:
    """The record of the study named ``name``."""
    for study in STUDIES:
        if study.name == name:
            return study
    raise ValueError(f"unknown study {name!r}; valid choices: {', '.join(s.name for s in STUDIES)}")
