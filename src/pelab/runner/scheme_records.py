"""What each scheme (and each task's problem) is trained from, as records the check stage writes and the run and
tune stages depend on in place of the schemes' modules, entries and switches, which are found by name and so cannot
be named in dvc.yaml from the stage's own text:

* ``reports/schemes/each/<scheme>.json`` for every scheme of a study with a stage per (task, scheme): its entry's
  ``training_record`` and line (``positional/schemes.yaml``, or ``<scheme>+<switch>``) and the sha256 of the modules
  it executes: its class's, its switches' and ``none``'s, the cross-attention of encoder-decoders
  (``scheme_sources``). The stage ``run@<task>-<scheme>`` depends on its scheme's file.
* ``reports/schemes/<study>.json`` for a study with a stage per task (``StudyRecord.per_scheme`` False, whose stages
  run every scheme of a list: the list is a param): each listed scheme's training record, options and sources;
  ``<study>_problems.json``, the sha256 of each task's problem module (``problem_sources``).

A file is rewritten only where it differs, and DVC compares its hash: a new scheme, switch or problem, or an edit to
one a stage does not run, re-runs nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pelab import io
from pelab.closure import NO_SCHEME, ROOT, closure, module_file, problem_modules, scheme_modules, switch_modules
from pelab.params import Params
from pelab.positional import scheme_spec
from pelab.studies import STUDIES


def covered(modules: list[str] | set[str], task: str | None) -> set[Path]:
    """The files ``modules`` execute (their import closure, evaluation included): what a record's sha256 covers."""
    starts = [path for path in map(module_file, modules) if path is not None]  # a plugin's class: nothing of pelab's
    return set().union(*(closure(start, task, NO_SCHEME, evaluation=True) for start in starts))


def recorded_modules(scheme: str) -> set[str]:
    """The modules the registries import by name for a stage of ``scheme``: its class's, its switches' and
    ``none``'s (``closure.scheme_modules``, ``closure.switch_modules``)."""
    return scheme_modules(scheme) | switch_modules(scheme)


def _digest(modules: list[str] | set[str], task: str | None) -> str:
    """sha256 of the files ``modules`` execute (``covered``), path and text."""
    digest = hashlib.sha256()
    for path in sorted(covered(modules, task)):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


EACH = "each"  # the folder of the per-scheme records, under the check stage's --schemes


def scheme_sources(scheme: str) -> str:
    """sha256 of the files a stage of scheme ``scheme`` executes that the registries import by name
    (``recorded_modules``)."""
    return _digest(recorded_modules(scheme), None)


def scheme_record(scheme: str) -> dict[str, Any]:
    """What a stage of ``scheme`` reads of it beside its composed item (task and options): ``reports/schemes/each``."""
    spec = scheme_spec(scheme)
    return {"spec": spec.training_record(), "about": spec.about, "sources": scheme_sources(scheme)}


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


def per_scheme_names(raw: dict[str, Any]) -> list[str]:
    """Every scheme of a composed (task, scheme) item of params (``raw``: params.yaml as data), in order."""
    keys = [k for study in STUDIES if study.per_scheme for k in (study.runs_key, study.tuned_runs_key)]
    return list(dict.fromkeys(str(item["scheme"]) for key in keys for item in (raw.get(key) or {}).values()))


def _write(path: Path, records: Any) -> Path:
    if not path.exists() or io.read_json(path) != records:
        io.write_json(path, records)
    return path


def write_scheme_records(params: Params, raw: dict[str, Any], folder: str | Path) -> list[Path]:
    """``<folder>/each/<scheme>.json`` for every scheme of a study with a stage per (task, scheme) (``raw``:
    params.yaml as data); ``<folder>/<study>.json`` (its schemes) and ``<folder>/<study>_problems.json`` (its tasks'
    problems) for every study with a stage per task; each rewritten only where it differs, and no other file left in
    ``each``."""
    each = Path(folder) / EACH
    each.mkdir(parents=True, exist_ok=True)
    written = [_write(each / f"{scheme}.json", scheme_record(scheme)) for scheme in per_scheme_names(raw)]
    for stale in set(each.glob("*.json")) - set(written):
        stale.unlink()
    for study in (s for s in STUDIES if not s.per_scheme):
        for path, records in ((Path(folder) / f"{study.name}.json", study_scheme_records(params, study.name)),
                              (Path(folder) / f"{study.name}_problems.json", study_problem_records(params, study.name))):
            written.append(_write(path, records))
    return written
