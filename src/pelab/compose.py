"""Compose params.yaml from the Hydra config groups in conf/, as `dvc exp run -S group=option` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def compose_params(conf_dir: str | Path = "conf", overrides: list[str] | None = None) -> dict[str, Any]:
    """The dict DVC writes to params.yaml for these Hydra overrides (e.g. ["pe=alibi", "profile=quick"]).

    A Hydra error (an unknown group option, a malformed override) becomes one ValueError line.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base=None):
            cfg = compose(config_name="config", overrides=list(overrides or []))
        return OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as err:
        raise ValueError(_one_line(str(err), overrides or [])) from None


STUDY_LISTS_KEY = "study_lists"  # conf/config.yaml's key resolved by ``checked_study_lists``


def checked_study_lists(*, _root_: Any) -> str:
    """The resolver of conf/config.yaml's ``study_lists``: "checked", or one line where a task is listed in two
    studies' lists (``-S 'tasks=[reverse]'`` beside the length study's ``reverse``). DVC composes params.yaml and then
    reads every pipeline file, where such a task would be two stages writing one folder, and stops in its own words
    before any stage runs; this stops composition first, in pelab's (the check stage names every other bad list).
    Imports task code only when a task is listed twice, to name the study it belongs to."""
    from omegaconf import OmegaConf

    from pelab.studies import STUDIES, StudyRecord, as_list

    listed: dict[str, StudyRecord] = {}
    for study in STUDIES:
        node = OmegaConf.select(_root_, study.tasks_key)  # resolved: a list may be an interpolation
        lists = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
        for task in as_list(study.tasks_key, lists):
            if task in listed:
                from pelab.params import check_task_in

                for home in (listed[task], study):
                    check_task_in(home, task)
                where = {listed[task].tasks_key: None, study.tasks_key: None}
                raise ValueError(f"task {task!r} is listed twice, in {' and '.join(where)}")
            listed[task] = study
    return "checked"


def study_runs(name: str, *, _root_: Any) -> Any:
    """The resolver of conf/config.yaml's ``<study>_runs`` (``StudyRecord.runs_key``): {"<task>-<scheme>": {"task":
    task, "scheme": scheme}} for every task of study ``name`` and every scheme it runs (the study's list, filtered by
    the task's own list where it has one), in list order: what its run stages' DVC foreach reads. A malformed list is
    left to the check stage, which names it."""
    from omegaconf import OmegaConf

    from pelab.studies import STUDIES

    study = next(s for s in STUDIES if s.name == name)

    def resolved(key: str) -> Any:
        node = OmegaConf.select(_root_, key)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node

    try:
        tasks = study.values(_nested(study.tasks_key, resolved), study.tasks_key)
        schemes = tuple(study.values(_nested(study.schemes_key, resolved), study.schemes_key))
        own = study.task_schemes_in({study.task_schemes_key: resolved(study.task_schemes_key)})
    except ValueError:
        return OmegaConf.create({})
    # a config node, not a dict: DVC resolves the composition in place (OmegaConf.resolve)
    return OmegaConf.create({f"{t}-{s}": {"task": str(t), "scheme": str(s)} for t in tasks
                             for s in (study.own_schemes(schemes, tuple(own[t])) if t in own else schemes)})


def _nested(key: str, resolved) -> dict[str, Any]:
    """{first part of dotted ``key``: its resolved value}: what ``StudyRecord.values`` reads ``key`` from."""
    head = key.split(".")[0]
    return {head: resolved(head)}


def register_resolvers() -> None:
    """Register ``checked_study_lists`` and ``study_runs`` with OmegaConf as ``pelab_study_lists`` and ``pelab_runs``
    (for pelab's own composition here, and in DVC's through ``hydra_plugins/pelab_resolvers.py``)."""
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("pelab_study_lists", checked_study_lists, replace=True)
    OmegaConf.register_new_resolver("pelab_runs", study_runs, replace=True)


def _one_line(message: str, overrides: list[str]) -> str:
    """Hydra's multi-line message -> its first line plus the valid choices it lists."""
    lines = [line.strip() for line in message.strip().splitlines()]
    first = " ".join(lines[0].split()).removeprefix("ValueError raised while resolving interpolation: ")
    text = f"bad override in {overrides}: {first}"
    if any(line.startswith("Available options") for line in lines):
        start = next(i for i, line in enumerate(lines) if line.startswith("Available options")) + 1
        choices = []
        for line in lines[start:]:
            if not line or line.startswith("Config search path"):
                break
            choices.append(line)
        text += f"; valid choices: {', '.join(choices)}"
    return text
