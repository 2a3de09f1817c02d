"""``params.yaml`` -> ``Params``, validated as a whole when it is loaded.

``load_params`` checks every section a study reads — the schemes and their options, every task's data,
model, training and evaluation settings, the device — so bad input fails before any stage trains, with
one line naming the key and the valid choices.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pelab.config import check_device
from pelab.positional import check_scheme, scheme_names, scheme_options
from pelab.studies import STUDIES, StudyLists, StudyRecord, StudyValues, study_of
from pelab.tasks import get_task, task_names
from pelab.tasks.base import TaskConfig


@dataclass(frozen=True)
class Tuning:
    """Params ``tune``: the per-scheme learning-rate sweep (``pelab.runner.tune``). Each (task, scheme) of the tasks
    listed trains seed ``seed`` at the task's ``train.lr`` times each of ``scales`` on the task's tuning split (no
    test data), keeps the rate with the lowest best validation loss (over the logged steps), then trains every seed at it."""

    scales: tuple[float, ...] = (0.5, 1.0, 2.0)
    seed: int = 0
    tasks: tuple[str, ...] = ()  # every study's tuned tasks together (params lists them per study, for dvc.yaml)


@dataclass(frozen=True)
class Params(StudyLists):
    """The whole of params.yaml, validated. ``task(name)`` is one task's typed configuration."""

    profile: str
    studies: dict[str, StudyValues]  # each study's tasks and schemes, keyed by its record's name, in record order
    seeds: tuple[int, ...]
    device: str
    reference: str  # the scheme every other is compared against, declared before the run (no post-hoc "best")
    task_configs: dict[str, TaskConfig]
    tune: Tuning = field(default_factory=Tuning)

    def at_lr_scale(self, task: str, scale: float) -> Params:
        """These params with ``task``'s learning rate multiplied by ``scale`` (the tuning sweep's runs)."""
        cfg = self.task(task)
        if scale == 1.0:
            return self
        cfg = replace(cfg, train=replace(cfg.train, lr=cfg.train.lr * scale))
        return replace(self, task_configs={**self.task_configs, task: cfg})

    def to_dict(self) -> dict[str, Any]:
        """The study as plain data (JSON): every list above and each task's resolved sections and scheme options,
        what the aggregate stage writes as ``reports/study.json`` for the report (``pelab.report.study``)."""
        def task_dict(cfg: TaskConfig) -> dict[str, Any]:
            return {**{s: asdict(getattr(cfg, s)) for s in ("data", "model", "train", "eval")},
                    "positional": {scheme: asdict(options) for scheme, options in cfg.positional.items()}}

        return {"profile": self.profile, "seeds": list(self.seeds), "reference": self.reference,
                "studies": {name: {"tasks": list(v.tasks), "schemes": list(v.schemes),
                                   "task_schemes": {t: list(s) for t, s in v.task_schemes}}
                            for name, v in self.studies.items()},
                "tune": {"scales": list(self.tune.scales), "seed": self.tune.seed, "tasks": list(self.tune.tasks)},
                "task_configs": {name: task_dict(cfg) for name, cfg in self.task_configs.items()}}


def parse_params(raw: dict[str, Any], *, check_cuda: bool = True) -> Params:
    """Validate a params mapping (the composition of ``conf/``) into ``Params``."""
    raw = dict(raw or {})

    def scheme_list(key: str, values) -> tuple[str, ...]:
        names = tuple(str(s) for s in values or ())
        for name in names:
            check_scheme(name)
        if len(set(names)) != len(names):
            raise ValueError(f"{key} lists a scheme twice: {list(names)}")
        return names

    # each study's tasks and schemes, at the params keys its record names (pelab.studies.STUDIES)
    lists: dict[str, StudyValues] = {}
    for study in STUDIES:
        study_tasks = tuple(str(t) for t in study.values(raw, study.tasks_key))
        for name in study_tasks:
            check_task_in(study, name)
        study_schemes = scheme_list(study.schemes_key, study.values(raw, study.schemes_key))
        if study_tasks and not study_schemes:
            raise ValueError(f"{study.schemes_key} is empty while {study.tasks_key} is not; list at least one scheme, "
                             f"e.g. '{study.schemes_key}=[none,rope]', or leave the study out with "
                             f"'{study.tasks_key}=[]'")
        own = {}  # a task's own list; an entry for a task the study does not list now is checked and left
        for name, schemes in study.task_schemes_in(raw).items():
            check_task_in(study, name)
            own[name] = scheme_list(f"{study.task_schemes_key}.{name}", schemes)
            if not own[name]:
                raise ValueError(f"{study.task_schemes_key}.{name} is empty; list at least one scheme, e.g. "
                                 f"'{study.task_schemes_key}.{name}=[none,rope]', or remove the entry")
        if study.per_scheme:  # its tune stages cross its tuned tasks with its whole list
            for name in (t for t in study.values(raw, study.tune_key) if t in own):
                raise ValueError(f"{study.tune_key} lists {name!r}, which {study.task_schemes_key} gives a list of its "
                                 f"own; tuning runs a task with every scheme of {study.schemes_key}: remove one of them")
        lists[study.name] = StudyValues(study_tasks, study_schemes,
                                        tuple((t, study.own_schemes(study_schemes, own[t])) for t in study_tasks
                                              if t in own))
    seeds = tuple(raw.get("seeds") or ())
    if not seeds or not all(isinstance(s, int) and s >= 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers >= 0, got {list(seeds)}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {list(seeds)}")
    tasks = tuple(t for values in lists.values() for t in values.tasks)  # every study's, in record order
    keys = " + ".join(s.tasks_key for s in STUDIES)
    if not tasks:
        raise ValueError(f"{keys} are empty; list at least one of: {', '.join(task_names())}")
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"a task is listed twice in {keys}: {list(tasks)}")
    device = str(raw.get("device", "auto"))
    check_device(device) if check_cuda else None
    reference = str(raw.get("reference", "sinusoidal"))
    check_scheme(reference)  # a run without it (e.g. pe=alibi) reports no comparisons against it
    positional_raw = dict(raw.get("positional") or {})
    unknown = sorted(set(positional_raw) - set(scheme_names()))
    if unknown:
        raise ValueError(f"unknown scheme(s) {unknown} in positional; valid choices: {', '.join(scheme_names())}")
    for name in scheme_names():  # the options every task inherits (a task's own overrides are checked with it)
        scheme_options(name, positional_raw.get(name))
    task_configs = {}
    for name in tasks:
        task = get_task(name)
        if task.section is not None and name in raw:
            raise ValueError(f"params section {name!r}: task {name!r} reads the {task.section!r} section; move its "
                             f"settings there")
        task_schemes = next(v.schemes_of(name) for v in lists.values() if name in v.tasks)
        task_configs[name] = task.config(raw.get(task.params_section), task_schemes, positional_raw)
    return Params(
        profile=str(raw.get("profile", "custom")), studies=lists, seeds=seeds, device=device,
        reference=reference, task_configs=task_configs,
        tune=parse_tuning(raw.get("tune"), {tune_list(s): lists[s.name].tasks for s in STUDIES}),
    )


def check_task_in(study: StudyRecord, name: str) -> None:
    """One line if ``name`` is not a registered task of ``study``, naming the study's tasks (or the list it
    belongs in)."""
    from pelab.tasks import TASKS

    mine = [t for t, cls in TASKS.items() if study_of(cls.__module__) is study]
    if name in mine:
        return
    if name in TASKS:
        home = study_of(TASKS[name].__module__)
        raise ValueError(f"task {name!r} is in {study.tasks_key} but belongs to the {home.name} study; list it in "
                         f"{home.tasks_key}")
    raise ValueError(f"unknown task {name!r}; valid choices: {', '.join(mine)}")


def tune_list(study: StudyRecord) -> str:
    """The key under params ``tune`` of ``study``'s tuned tasks (``tasks`` for ``tune.tasks``)."""
    return study.tune_key.removeprefix("tune.")


def parse_tuning(raw: dict[str, Any] | None, studies: dict[str, tuple[str, ...]]) -> Tuning:
    """Validate params ``tune``; ``studies``: each tune list's study tasks (``tune.<list>`` must be a subset of the
    study's tasks: ``tune.tasks`` of ``tasks``, and so on for every study)."""
    raw = dict(raw or {})
    tune_lists = [tune_list(s) for s in STUDIES]
    unknown = sorted(set(raw) - {"scales", "seed", *tune_lists})
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in tune; valid keys: {', '.join(['scales', 'seed', *tune_lists])}")
    scales = tuple(raw.get("scales") or Tuning.scales)
    if not all(isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0 for s in scales):
        raise ValueError(f"tune.scales must be numbers > 0 (multiples of each task's train.lr), got {list(scales)}")
    scales = tuple(float(s) for s in scales)
    if 1.0 not in scales or len(set(scales)) != len(scales):
        raise ValueError(f"tune.scales must be distinct and include 1.0 (the shared rate), got {list(scales)}")
    seed = raw.get("seed", Tuning.seed)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"tune.seed must be an integer >= 0, got {seed!r}")
    tuned: list[str] = []
    for key in tune_lists:
        for name in (str(t) for t in raw.get(key) or ()):
            if name not in studies[key]:
                raise ValueError(f"tune.{key} lists {name!r}, which is not in {key}; valid choices: "
                                 f"{', '.join(studies[key]) or '(none: ' + key + ' is empty)'}")
            if name in tuned:
                raise ValueError(f"tune.{key} lists {name!r} twice")
            tuned.append(name)
    return Tuning(scales=tuple(sorted(scales)), seed=seed, tasks=tuple(tuned))


def load_params(path: str | Path = "params.yaml", *, check_cuda: bool = True) -> Params:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no params file at {path}; compose one with `pelab compose --out {path}`")
    with open(path) as f:
        return parse_params(yaml.safe_load(f) or {}, check_cuda=check_cuda)
