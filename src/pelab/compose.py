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


def study_runs(name: str, kind: str = "run", *, _root_: Any) -> Any:
    """The resolver of conf/config.yaml's ``<study>_runs`` and ``<study>_tuned_runs`` (``StudyRecord.runs_key``,
    ``tuned_runs_key``; ``kind`` "run" or "tune"): {"<task>-<scheme>": {"task": task, "scheme": scheme, "options": its
    options where params set some}} for every task of study ``name`` (of
    its tune list for "tune") and every scheme it runs (the study's list, filtered by the task's own list where it has
    one), in list order: what its stages' DVC foreach reads, each stage depending on its own item. A malformed list,
    an unknown scheme, is left to the check stage, which names it."""
    from omegaconf import OmegaConf

    from pelab.studies import STUDIES

    study = next(s for s in STUDIES if s.name == name)

    def resolved(key: str) -> Any:
        node = OmegaConf.select(_root_, key)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node

    try:
        tasks = study.values(_nested(study.tasks_key, resolved), study.tasks_key)
        if kind == "tune":
            tasks = [t for t in study.values(_nested(study.tune_key, resolved), study.tune_key) if t in tasks]
        schemes = tuple(study.values(_nested(study.schemes_key, resolved), study.schemes_key))
        own = study.task_schemes_in({study.task_schemes_key: resolved(study.task_schemes_key)}) \
            if study.task_schemes_key else {}
    except ValueError:
        return OmegaConf.create({})
    def options_in(key: str, scheme: str) -> dict[str, Any]:
        node = resolved(key)
        mine = node.get(scheme) if isinstance(node, dict) else None
        return mine if isinstance(mine, dict) else {}

    def item(task: str, scheme: str) -> dict[str, Any]:
        # as the task reads them (``Task.config``): the task section's keys over ``positional.<scheme>``'s
        options = {**options_in("positional", scheme), **options_in(f"{study.section(task)}.positional", scheme)}
        return {"task": str(task), "scheme": str(scheme), **({"options": options} if options else {})}

    # a config node, not a dict: DVC resolves the composition in place (OmegaConf.resolve)
    return OmegaConf.create({f"{t}-{s}": item(t, s) for t in tasks
                             for s in (study.own_schemes(schemes, tuple(own[t])) if t in own else schemes)})


def stale_items(raw: dict[str, Any]) -> list[str]:
    """The composed item keys of ``raw`` (``<study>_runs``, ``<study>_tuned_runs``) that differ from what its lists and
    options compose to now: params.yaml edited by hand, not recomposed. Its stages depend on their items, so a stale
    one would hide an edit from DVC; the check stage stops on one."""
    from omegaconf import OmegaConf

    from pelab.studies import STUDIES

    root = OmegaConf.create({k: v for k, v in raw.items()})
    stale = []
    for study in STUDIES:
        for key, kind in ((study.runs_key, "run"), (study.tuned_runs_key, "tune")):
            if key and key in raw:
                composed = OmegaConf.to_container(study_runs(study.name, kind, _root_=root), resolve=True)
                if composed != raw[key]:
                    stale.append(key)
    return stale


def _nested(key: str, resolved) -> dict[str, Any]:
    """{first part of dotted ``key``: its resolved value}: what ``StudyRecord.values`` reads ``key`` from."""
    head = key.split(".")[0]
    return {head: resolved(head)}


def plus(a: Any, b: Any) -> int:
    """``${pelab_plus:a,b}``: a + b as integers (a table of L + 1 rows: ``${pelab_plus:${lm.data.context},1}``)."""
    return int(a) + int(b)


def register_resolvers() -> None:
    """Register ``checked_study_lists``, ``study_runs`` and ``plus`` with OmegaConf as ``pelab_study_lists``,
    ``pelab_runs`` and ``pelab_plus`` (for pelab's own composition here, and in DVC's through
    ``hydra_plugins/pelab_resolvers.py``)."""
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("pelab_study_lists", checked_study_lists, replace=True)
    OmegaConf.register_new_resolver("pelab_runs", study_runs, replace=True)
    OmegaConf.register_new_resolver("pelab_plus", plus, replace=True)


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
