"""What each scheme (and each task's problem) of a study with a stage per task is trained from, as one record the
check stage writes
(``reports/schemes/<study>.json``) and the study's run and tune stages depend on instead of every scheme's module,
entry and options: a stage running every scheme of a list (``StudyRecord.per_scheme`` False) cannot name its schemes'
files in dvc.yaml (the list is a param), so a scheme the study does not list would otherwise re-run it.

A scheme's record: its entry's ``training_record`` (``positional/schemes.yaml``), its options as the study's tasks
read them, and the sha256 of the modules its class imports (``scheme_sources``); a task's, the sha256 of its
problem's module (``problem_sources``: the problems are found by name too). The file is rewritten only where it
differs, and DVC compares its hash: a new scheme or problem, or an edit to one the study does not list, re-runs
nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pelab import io
from pelab.closure import NO_SCHEME, ROOT, closure, module_file, problem_modules
from pelab.params import Params
from pelab.positional import scheme_spec
from pelab.studies import STUDIES


def _digest(modules: list[str], task: str | None) -> str:
    """sha256 of the files ``modules`` execute (their import closure, evaluation included), path and text."""
    digest = hashlib.sha256()
    starts = [path for path in map(module_file, modules) if path is not None]  # a plugin's class: nothing of pelab's
    for path in sorted(set().union(*(closure(start, task, NO_SCHEME, evaluation=True) for start in starts))):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def scheme_sources(scheme: str) -> str:
    """sha256 of the files scheme ``scheme``'s class module executes."""
    return _digest([scheme_spec(scheme).module], None)


def problem_sources(task: str) -> str | None:
    """sha256 of the files task ``task``'s problem module executes (the length study's ``problems/<name>.py``), or
    None for a task without a problem."""
    modules = sorted(problem_modules(task))
    return _digest(modules, task) if modules else None


def study_scheme_records(params: Params, study: str) -> dict[str, Any]:
    """{scheme: {"spec", "options", "sources"}} for every scheme a task of ``study`` runs, in list order (the study's
    tasks share its params section, so a scheme's options are the same for each)."""
    values = params.studies.get(study)
    records: dict[str, Any] = {}
    for task in (values.tasks if values else ()):
        for scheme in values.schemes_of(task):
            if scheme not in records:
                records[scheme] = {"spec": scheme_spec(scheme).training_record(),
                                   "options": asdict(params.task(task).options(scheme)),
                                   "sources": scheme_sources(scheme)}
    return records


def study_problem_records(params: Params, study: str) -> dict[str, str]:
    """{task: the sha256 of its problem's module} for every task of ``study`` that has one (what its prepare, run and
    tune stages depend on in place of the problem modules)."""
    values = params.studies.get(study)
    return {task: sources for task in (values.tasks if values else ()) if (sources := problem_sources(task))}


def write_scheme_records(params: Params, folder: str | Path) -> list[Path]:
    """``<folder>/<study>.json`` (its schemes) and ``<folder>/<study>_problems.json`` (its tasks' problems) for every
    study with a stage per task, each rewritten only where it differs."""
    written = []
    for study in (s for s in STUDIES if not s.per_scheme):
        for path, records in ((Path(folder) / f"{study.name}.json", study_scheme_records(params, study.name)),
                              (Path(folder) / f"{study.name}_problems.json", study_problem_records(params, study.name))):
            if not path.exists() or io.read_json(path) != records:
                io.write_json(path, records)
            written.append(path)
    return written
