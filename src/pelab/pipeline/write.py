"""`pelab pipeline`: the DVC pipeline written from the study records (``pelab.studies.STUDIES``).

Writes ``pipelines/<study>/<kind>/dvc.yaml`` for each study's stage groups (prepare, run, tune; each a DVC
``matrix`` over the study's params lists, so `dvc exp run -S` chooses tasks and schemes)
and the root ``dvc.yaml`` (aggregate and report over every study, the plots). One file per stage group, because each
file keeps its own ``dvc.lock`` and DVC rewrites the whole lock after every stage: a cost that grows with the file,
so with the square of the stages in it (``benchmarks/results/suite_time.md``).

A stage's code dependencies are the import closure of its script (``pelab.closure``) over every task of
the study and every registered scheme, written with ``${item.task}`` and ``${item.scheme}`` where a path is the
item's own (``src/pelab/tasks/copy`` → ``src/pelab/tasks/${item.task}``), and as one folder where the closure holds
every file in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pelab.closure import NO_SCHEME, PACKAGE, ROOT, closure, module_file, problem_modules
from pelab.studies import STAGE_KINDS, STUDIES, StudyRecord, study_of

HEADER = """\
# Written by `pelab pipeline` from the study records (src/pelab/studies.py) and each stage's import closure
# (src/pelab/closure.py): edit those, then run `pelab pipeline`; tests/test_dvc_deps.py fails when
# this file is not what that command writes. Every path a stage reads or writes is named here.
"""
TASK, SCHEME, ITEM = "${item.task}", "${item.scheme}", "${item}"
SCHEMES_FILE = "src/pelab/positional/schemes.yaml"  # never a whole-file dependency of a run stage (pelab.closure)
CLAIMS_FILE = "src/pelab/report/claims.yaml"  # the claims the aggregate stage judges for the headline
SCHEME_RECORDS = "reports/schemes"  # the check stage's records of what each scheme is trained from (runner.scheme_records)
CODE_RECORDS = "reports/code"  # the check stage's records of the code each stage group runs (pipeline.code_records)
WDIR = "../../.."  # a study's stages run in the repository's root, like the root pipeline's
CHECKED = "reports/params_checked.txt"  # the check stage's output, which every prepare stage reads


def plots() -> list[tuple[str, str, str, str]]:
    """The plots of the root pipeline (`dvc plots show`), each task's (``Task.plots``): (name, curve, title, y label),
    each reading reports/plots/<name>.csv, which stages/aggregate.py writes."""
    from pelab.tasks import get_task, task_names

    return [(f"{task}_{suffix}", curve, title, y_label) for task in task_names()
            for suffix, (curve, title, y_label) in get_task(task).plots().items()]

COMMENTS = {
    "prepare": "One prepare stage per task: the data every scheme of the task trains and is scored on.",
    "run": "One run stage per (task, scheme): its seeds trained together as one vectorised model\n"
           "(pelab/training/stacking.py), each kept at its best validation step, then scored (results/<task>/<scheme>/\n"
           "seed_<k>/) with the per-run probe. Finished runs are also kept under .kept/ (not an output: DVC deletes\n"
           "outputs before a rerun), so adding a seed trains only that seed, a killed stage resumes from the state it\n"
           "saves there, and a change that only evaluation reads restores every run and scores it again\n"
           "(pelab/runner/kept_runs.py). Depends on the check stage's record of its scheme (reports/schemes/each/\n"
           "<scheme>.json: its entry in src/pelab/positional/schemes.yaml and the sha256 of its class's and switches'\n"
           "modules, which are found by name: adding a scheme or a switch re-runs no stage), the code every scheme\n"
           "runs, and the params it reads: the task's model, train and eval sections and its item (task, scheme, its\n"
           "options where params set some: `positional.<scheme>` under `<task>.positional.<scheme>`). Its live\n"
           "curves (loss, lr, val_loss) are cached like any output: DVC's run cache restores a stage only if every\n"
           "output can be restored.",
    "tune": "Per-scheme learning rates (pelab/runner/tune.py), for the tasks of the study's tune list: seed tune.seed\n"
            "trains at each of tune.scales times the task's rate on its tuning data (no test rows), the rate of\n"
            "lowest best validation loss is chosen, every seed trains at it into runs/tuned (the sweep in\n"
            "runs/sweep), and the tuned runs are scored like the run stage's (results/tuned/<task>/<scheme>/).\n"
            "A chosen scale of 1 restores the shared-rate runs kept under .kept/.",
    "run_per_task": "One run stage per task: every scheme of the study's list, one after another, in one process\n"
                    "(a stage costs seconds that train nothing; this study's runs are small). Otherwise as the main\n"
                    "study's: each scheme's seeds trained together as one vectorised model, each kept at its best\n"
                    "validation step, then scored (results/<task>/<scheme>/seed_<k>/) with the per-run probe;\n"
                    "finished runs kept under .kept/ per (task, scheme), so adding a scheme trains only its runs and\n"
                    "an edit to one scheme's module retrains only that scheme's (pelab/runner/kept_runs.py). Depends\n"
                    "on the lists of schemes and on the check stage's record of what each listed scheme is trained\n"
                    "from (its entry, options and modules: reports/schemes/<study>.json), so a scheme the study does\n"
                    "not list re-runs nothing here.",
    "tune_per_task": "Per-scheme learning rates (pelab/runner/tune.py) as in the main study, one stage per tuned task\n"
                     "running every scheme of the study's list: the sweep, the choice, the tuned runs, scored\n"
                     "(results/tuned/<task>/<scheme>/).",
}


def registered_tasks(study: StudyRecord) -> list[str]:
    from pelab.tasks import TASKS

    return [name for name, cls in TASKS.items() if study_of(cls.__module__) is study]


@cache
def _files_under(folder: Path) -> frozenset[Path]:
    return frozenset(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


@cache
def _resources(folder: Path) -> frozenset[Path]:
    """The non-Python files in ``folder`` and the files of its sub-folders without Python code (templates)."""
    out: set[Path] = set()
    for path in folder.iterdir():
        if path == ROOT / SCHEMES_FILE:
            continue  # read entry by entry, through the check stage's records of the schemes (runner.scheme_records)
        if path.is_file() and path.suffix != ".py":
            out.add(path)
        elif path.is_dir() and path.name != "__pycache__" and not any(path.rglob("*.py")):
            out |= _files_under(path)
    return frozenset(out)


def with_resources(files: set[Path]) -> set[Path]:
    """``files`` and the files code beside them reads: non-Python files in their folders, and folders without
    Python code inside those (templates)."""
    out = set(files)
    for folder in {f.parent for f in files if f.is_relative_to(PACKAGE)}:
        out |= _resources(folder)
    return out


def compress(files: set[Path]) -> set[Path]:
    """``files`` (and their resources) with each folder of pelab whose every file is among them as the folder."""
    files = with_resources(files)
    out = set()
    for path in files:
        top = path
        if path.is_relative_to(PACKAGE):
            for folder in path.parents:
                if folder == PACKAGE or not _files_under(folder) - {ROOT / SCHEMES_FILE} <= files:
                    break
                top = folder
        out.add(top)
    return out


def template(path: Path, task: str | None, task_var: str) -> str:
    """``path`` relative to the repository, with the item's own task folder as a variable."""
    text = path.relative_to(ROOT).as_posix()
    if task is not None:
        folder = f"src/pelab/tasks/{task}"
        if text == folder or text.startswith(folder + "/"):
            text = f"src/pelab/tasks/{task_var}{text[len(folder):]}"
    return text


def code_deps(script: str, study: StudyRecord, evaluation: bool, task_var: str = TASK) -> list[str]:
    """The code dependencies of a stage group of ``study`` that runs ``stages/<script>``: the union, over its tasks,
    of the script's closure for no scheme, templated (a task's own folder as ``task_var``). What the registries import
    by name for a scheme (its class's module, its switches') and a task's problem are in the check stage's records
    instead (``SCHEME_RECORDS``, ``runner.scheme_records``). A templated path that some task lacks becomes its task
    folder."""
    per_task = study.package is None
    tasks = registered_tasks(study)
    entries: set[str] = set()
    for task in tasks:
        found = closure(ROOT / "stages" / script, task, NO_SCHEME, evaluation)
        if not study.per_scheme:  # a study of a stage per task: its problem's module is in the check stage's record
            found -= {module_file(m) for m in problem_modules(task)}
        entries |= {template(p, task if per_task else None, task_var) for p in compress(found)}
    if per_task:
        entries = {_widen(e, tasks, task_var) for e in entries}
    return _ordered(_compress_union(entries))


def _compress_union(entries: set[str]) -> set[str]:
    """``entries`` with each folder of pelab whose every file is among the union of the plain (untemplated) entries as
    the folder: the union over tasks and schemes may cover a folder that no one closure covers (a stage running
    every scheme depends on every module of ``pelab/positional``: one entry, not twenty)."""
    templated = {e for e in entries if "${" in e}
    files: set[Path] = set()
    for entry in entries - templated:
        path = ROOT / entry
        files |= set(_files_under(path)) if path.is_dir() else {path}
    return templated | {p.relative_to(ROOT).as_posix() for p in compress(files)}


def _widen(entry: str, tasks: Iterable[str], task_var: str) -> str:
    while task_var in entry and not all((ROOT / entry.replace(task_var, t)).exists() for t in tasks):
        entry = entry.rsplit("/", 1)[0]
    return entry


def _ordered(entries: Iterable[str]) -> list[str]:
    """Without entries inside another entry's folder; the stage scripts first."""
    entries = set(entries)
    inside = {e for e in entries if any(e.startswith(f + "/") for f in entries)}
    return sorted(entries - inside, key=lambda e: (not e.startswith("stages/"), e.startswith("stages/_"), e))


def study_stages(study: StudyRecord) -> dict[str, dict[str, Any]]:
    """The stage groups of ``study`` (``STAGE_KINDS``), as its pipeline files hold them."""
    return {study.stage("prepare"): prepare_stage(study),
            **(per_scheme_stages(study) if study.per_scheme else per_task_stages(study))}


def prepare_stage(study: StudyRecord) -> dict[str, Any]:
    return {
        "foreach": f"${{{study.tasks_key}}}",
        "do": {
            "wdir": WDIR,
            "cmd": f"python stages/prepare.py --task {ITEM} --out data/{ITEM}",
            "deps": [CHECKED, *([] if study.per_scheme else [problem_record_file(study)]),
                     code_record_file(study, "prepare", ITEM), *study.corpora],
            "params": [f"{study.package or ITEM}.data"],
            "outs": [f"data/{ITEM}"],
        },
    }


def per_scheme_stages(study: StudyRecord) -> dict[str, dict[str, Any]]:
    """A run and a tune stage per (task, scheme): DVC matrices over the study's lists (the run stages a foreach over
    the composed pairs where the study's tasks may have lists of their own, ``StudyRecord.runs_key``)."""
    section = study.package or TASK
    run = f"{TASK}/{SCHEME}"
    from pelab.runner.scheme_records import EACH

    # the item itself (task, scheme, its options where params set some) and the check stage's record of its scheme
    read = ["seeds", f"{section}.model", f"{section}.train", f"{section}.eval"]
    record = f"{SCHEME_RECORDS}/{EACH}/{SCHEME}.json"
    body = {
        "wdir": WDIR,
        "cmd": f"python stages/run.py --task {TASK} --scheme {SCHEME} --data data/{TASK} --runs runs "
               f"--live dvclive --results results",
        "deps": [f"data/{TASK}", record, code_record_file(study, "run", TASK)],
        "params": [*read, f"{study.runs_key}.${{key}}"],
        "outs": [f"runs/{run}", f"results/{run}"],
        "plots": [{f"dvclive/{run}": {"x": "step"}}],
    }
    # a foreach over the composed (task, scheme) items, whose keys name the stages (run@<task>-<scheme>)
    return {
        study.stage("run"): {"foreach": f"${{{study.runs_key}}}", "do": body},
        study.stage("tune"): {"foreach": f"${{{study.tuned_runs_key}}}", "do": {
            "wdir": WDIR,
            "cmd": f"python stages/tune.py --task {TASK} --scheme {SCHEME} --data data/{TASK} --runs runs/tuned "
                   f"--sweeps runs/sweep --results results/tuned",
            "deps": [f"data/{TASK}", record, code_record_file(study, "tune", TASK)],
            "params": [*read[:1], "tune.scales", "tune.seed", *read[1:], f"{study.tuned_runs_key}.${{key}}"],
            "outs": [f"runs/tuned/{run}", f"runs/sweep/{run}", f"results/tuned/{run}"],
        }},
    }


def per_task_stages(study: StudyRecord) -> dict[str, dict[str, Any]]:
    """A run and a tune stage per task, each running every scheme of the study's list: DVC foreach over its tasks.
    They read the lists themselves, and what each listed scheme is trained from (its entry, options and modules)
    through the check stage's record of them (``runner.scheme_records``): a scheme the study does not list changes
    nothing they read."""
    section = study.package or ITEM
    read = ["seeds", study.schemes_key, study.task_schemes_key, f"{section}.model", f"{section}.train",
            f"{section}.eval"]
    record = [scheme_record_file(study), problem_record_file(study)]
    return {
        study.stage("run"): {
            "foreach": f"${{{study.tasks_key}}}",
            "do": {
                "wdir": WDIR,
                "cmd": f"python stages/run.py --task {ITEM} --data data/{ITEM} --runs runs --live dvclive "
                       f"--results results",
                "deps": [f"data/{ITEM}", *record, code_record_file(study, "run", ITEM)],
                "params": read,
                "outs": [f"runs/{ITEM}", f"results/{ITEM}"],
                "plots": [{f"dvclive/{ITEM}": {"x": "step"}}],
            },
        },
        study.stage("tune"): {
            "foreach": f"${{{study.tune_key}}}",
            "do": {
                "wdir": WDIR,
                "cmd": f"python stages/tune.py --task {ITEM} --data data/{ITEM} --runs runs/tuned --sweeps runs/sweep "
                       f"--results results/tuned",
                "deps": [f"data/{ITEM}", *record, code_record_file(study, "tune", ITEM)],
                "params": [*read[:1], "tune.scales", "tune.seed", *read[1:]],
                "outs": [f"runs/tuned/{ITEM}", f"runs/sweep/{ITEM}", f"results/tuned/{ITEM}"],
            },
        },
    }


def scheme_record_file(study: StudyRecord) -> str:
    """The check stage's record of the schemes of a study with a stage per task (``runner.scheme_records``)."""
    return f"{SCHEME_RECORDS}/{study.name}.json"


def code_record_file(study: StudyRecord, kind: str, task_var: str) -> str:
    """The check stage's record of the code a stage of ``study``'s ``kind`` runs for its task (``task_var``: how the
    stage names it), which it depends on in place of the files (``pipeline.code_records``)."""
    return f"{CODE_RECORDS}/{study.name}/{kind}/{task_var}.json"


def problem_record_file(study: StudyRecord) -> str:
    """Likewise of its tasks' problems (what its prepare stages read in place of the problem modules)."""
    return f"{SCHEME_RECORDS}/{study.name}_problems.json"


def root_stages() -> dict[str, dict[str, Any]]:
    """check, before every other stage; aggregate and report: over every study's runs and results."""
    from pelab.pipeline.code_records import recorded_files
    from pelab.runner.scheme_records import EACH
    from pelab.tasks import task_names

    sections = list(dict.fromkeys(study_of_task(t).package or t for t in task_names()))
    study_keys = [k for s in STUDIES for k in (s.tasks_key, s.schemes_key, s.task_schemes_key) if k]
    return {
        "check": {
            "cmd": f"python stages/check.py --out {CHECKED} --schemes {SCHEME_RECORDS} --code {CODE_RECORDS}",
            # its own code, and every file the records of the stage groups' code cover
            "deps": _ordered(_root_deps("check.py") | {SCHEMES_FILE} | recorded_files()),
            # every key of params.yaml (`pe`: the scheme selection, with its list)
            "params": _outermost(["profile", "pe", *study_keys, "seeds", "reference", "device", "tune", "positional",
                                  *sections]),
            "outs": [CHECKED, f"{SCHEME_RECORDS}/{EACH}", CODE_RECORDS,
                     *(f for s in STUDIES if not s.per_scheme for f in (scheme_record_file(s), problem_record_file(s)))],
        },
        "aggregate": {
            "cmd": "python stages/aggregate.py --runs runs --results results --metrics reports/metrics "
                   "--summary reports/summary.json --records reports/records.csv --plots reports/plots "
                   "--study reports/study.json --tuning reports/tuning.json --headline reports/headline.json",
            "deps": [*_ordered(_root_deps("aggregate.py") | {SCHEMES_FILE, CLAIMS_FILE}), "runs", "results"],
            # every key reports/study.json holds: the report reads the study from it, not from params.yaml
            "params": ["profile", *study_keys, "seeds", "reference", "tune", "positional", *sections],
            "metrics": [{"reports/headline.json": {"cache": False}}],
            "outs": [{"reports/metrics": {"cache": False}}, {"reports/summary.json": {"cache": False}},
                     "reports/records.csv",
                     {"reports/plots": {"cache": False}}, {"reports/study.json": {"cache": False}},
                     {"reports/tuning.json": {"cache": False}}],
        },
        "report": {
            "cmd": "python stages/report.py --study reports/study.json --records reports/records.csv "
                   "--plots reports/plots --runs runs --results results --tuning reports/tuning.json "
                   "--figures reports/figures --out reports/report.md",
            "deps": [*_ordered(_root_deps("report.py") | {SCHEMES_FILE}), "reports/study.json", "reports/tuning.json",
                     "reports/records.csv", "reports/plots", "runs", "results"],
            "outs": ["reports/report.md"],
            "plots": ["reports/figures"],
        },
    }


def _outermost(keys: list[str]) -> list[str]:
    """``keys`` less those below another of them (`pe.schemes` below `pe`)."""
    return [k for k in keys if not any(k.startswith(f"{other}.") for other in keys)]


def study_of_task(task: str) -> StudyRecord:
    from pelab.tasks import TASKS

    return study_of(TASKS[task].__module__)


def _root_deps(script: str) -> set[str]:
    found = closure(ROOT / "stages" / script, None, None, True, aggregation=script == "aggregate.py")
    return {p.relative_to(ROOT).as_posix() for p in compress(found)}


ROOT_COMMENTS = {
    "check": "params.yaml checked before any other stage (every prepare stage reads its output, which never changes):\n"
             "a bad study list, task section or scheme option stops `dvc repro` and `dvc exp run` here, in one line\n"
             "naming the value and the valid choices, before any data is prepared or any run trained.",
    "aggregate": "Every study's runs and results -> the headline (`dvc metrics show`: the claims' verdicts and each\n"
                 "task's ranking metric), the key metrics, the summary (`pelab summary`), records.csv, the curves'\n"
                 "CSVs (kept in git, so `dvc plots diff` works without a remote), the study's params as plain data\n"
                 "(reports/study.json, what the report reads) and the tuned ranking.",
    "report": "reports/report.md and its figures, from files only: the report runs no model and imports no task,\n"
              "model or training code. The figures are DVC image plots: `dvc plots diff <rev>` shows them.",
}


def _dump(stages: dict[str, dict[str, Any]], comments: dict[str, str], kind_of) -> str:
    blocks = []
    for name, body in stages.items():
        comment = "".join(f"  # {line}\n" for line in comments[kind_of(name)].splitlines())
        text = yaml.safe_dump({name: body}, sort_keys=False, width=116, allow_unicode=True)
        blocks.append(comment + "".join(f"  {line}\n" for line in text.splitlines()))
    return "stages:\n" + "\n".join(blocks)


def study_file(study: StudyRecord, kind: str) -> str:
    name = study.stage(kind)
    header = (f"{HEADER}#\n# The {kind} stages of {study.about}.\n# They run in the repository's root (wdir), "
              f"with its params.yaml.\nvars:\n  - {WDIR}/params.yaml\n\n")
    comment = kind if study.per_scheme or kind == "prepare" else f"{kind}_per_task"
    return header + _dump({name: study_stages(study)[name]}, COMMENTS, lambda _: comment)


def root_file() -> str:
    header = (f"{HEADER}#\n# Each study's stage groups are in pipelines/<study>/<kind>/dvc.yaml (studies "
              f"{', '.join(s.name for s in STUDIES)}; kinds\n# {', '.join(STAGE_KINDS)}), each with its own dvc.lock. "
              "`dvc repro` runs them all (this file's stages read\n# their outputs); `dvc stage list --all` names "
              "each stage as `dvc repro` takes it.\n\n")
    drawn = [{name: {"template": "overlay_schemes", "x": "step", "y": {f"reports/plots/{name}.csv": y},
                     "title": title, "x_label": "step", "y_label": y_label}} for name, y, title, y_label in plots()]
    text = yaml.safe_dump({"plots": drawn}, sort_keys=False, width=116, allow_unicode=True)
    return header + _dump(root_stages(), ROOT_COMMENTS, str) + "\n" + text


def pipeline_files() -> dict[str, str]:
    """{path relative to the repository: its text}: the root dvc.yaml and every study's."""
    return {"dvc.yaml": root_file(), **{s.pipeline(k): study_file(s, k) for s in STUDIES for k in STAGE_KINDS}}


def write(root: Path = ROOT) -> list[str]:
    """Write the pipeline files under ``root``; the paths whose text changed."""
    changed = []
    for rel, text in pipeline_files().items():
        path = root / rel
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(rel)
    return changed
