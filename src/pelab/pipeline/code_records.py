"""The check stage's records of the code each stage group executes: ``reports/code/<study>/<kind>/<task>.json``, the
sha256 of every file a stage of that group and task runs (``write.code_deps``, the import closure of its script, with
the task's own folder filled in). A prepare, run or tune stage depends on its task's record in place of naming each
file, so its entry in ``dvc.lock`` holds one hash where it held some fifty: DVC rewrites a group's whole lock after
every stage, a cost that grows with the entries (``benchmarks/results/suite_time.md``).

The check stage depends on every file a record covers (``recorded_files``), runs when any of them changes, and rewrites
only the records that differ: DVC compares their hashes, so an edit re-runs exactly the stages whose code it touched,
as the files named in ``dvc.yaml`` did. Until the check stage has run, `dvc status` names it, not the stages an edit
reaches. ``schemes.yaml`` is in no record (a stage depends on its scheme's entry: ``runner.scheme_records``), so adding
a scheme changes none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from pelab import io
from pelab.closure import ROOT
from pelab.pipeline.write import (CODE_RECORDS, ITEM, SCHEMES_FILE, TASK, _files_under, code_deps, code_record_file,
                                  compress, registered_tasks)
from pelab.studies import STAGE_KINDS, STUDIES, StudyRecord

SCRIPTS = {"prepare": ("prepare.py", False), "run": ("run.py", True), "tune": ("tune.py", True)}  # kind: script, scores


def task_var(study: StudyRecord, kind: str) -> str:
    """How a stage of the group names its task in ``dvc.yaml``: ``${item.task}`` in a foreach over (task, scheme)
    items, else ``${item}``."""
    return TASK if study.per_scheme and kind != "prepare" else ITEM


@cache
def group_deps(study: StudyRecord, kind: str) -> tuple[str, ...]:
    """The code entries (files and folders, some with the task's variable) of the stage group (``write.code_deps``)."""
    script, evaluation = SCRIPTS[kind]
    return tuple(code_deps(script, study, evaluation, task_var=task_var(study, kind)))


def code_files(study: StudyRecord, kind: str, task: str) -> list[Path]:
    """Every file a stage of the group runs for ``task``: its entries with the task filled in, folders as their
    files, sorted."""
    files: set[Path] = set()
    for entry in group_deps(study, kind):
        path = ROOT / entry.replace(task_var(study, kind), task)
        files |= set(_files_under(path)) if path.is_dir() else {path}
    return sorted(files - {ROOT / SCHEMES_FILE})


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def code_record(study: StudyRecord, kind: str, task: str, root: Path = ROOT) -> dict[str, str | None]:
    """{file relative to the repository: its sha256} of ``code_files``, read under ``root`` (the repository the
    stages run in, which DVC would hash: a copy of the project run with another checkout's pelab installed hashes its
    own files; None where it lacks one): what the stage's record holds."""
    return {rel: _sha256(root / rel) for rel in (p.relative_to(ROOT).as_posix() for p in code_files(study, kind, task))}


def groups() -> Iterator[tuple[StudyRecord, str, str]]:
    """(study, kind, task) of every record: each stage group of each study, for each task registered to it."""
    for study in STUDIES:
        for kind in STAGE_KINDS:
            for task in registered_tasks(study):
                yield study, kind, task


def record_path(folder: str | Path, study: StudyRecord, kind: str, task: str) -> Path:
    """Where ``write_code_records`` puts the record under ``folder`` (``write.code_record_file`` with the task)."""
    rel = code_record_file(study, kind, task_var(study, kind)).replace(task_var(study, kind), task)
    return Path(folder) / Path(rel).relative_to(CODE_RECORDS)


def write_code_records(folder: str | Path, root: str | Path = ROOT) -> list[Path]:
    """Every group's record under ``folder``, its files read under ``root``, each rewritten only where it differs; no
    other file left there."""
    written = []
    for study, kind, task in groups():
        path = record_path(folder, study, kind, task)
        record = code_record(study, kind, task, Path(root))
        if not path.exists() or io.read_json(path) != record:
            path.parent.mkdir(parents=True, exist_ok=True)
            io.write_json(path, record)
        written.append(path)
    for stale in set(Path(folder).rglob("*.json")) - set(written):
        stale.unlink()
    return written


def recorded_files() -> set[str]:
    """Every file some record covers, as few entries as cover them (folders whole where they are): the check stage's
    code dependencies beside its own closure."""
    files = {path for study, kind, task in groups() for path in code_files(study, kind, task)}
    return {path.relative_to(ROOT).as_posix() for path in compress(files)}
