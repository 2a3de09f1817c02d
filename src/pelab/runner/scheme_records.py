"""What each scheme of a study with a stage per task is trained from, as one record the check stage writes
(``reports/schemes/<study>.json``) and the study's run and tune stages depend on instead of every scheme's module,
entry and options: a stage running every scheme of a list (``StudyRecord.per_scheme`` False) cannot name its schemes'
files in dvc.yaml (the list is a param), so a scheme the study does not list would otherwise re-run it.

A scheme's record: its entry's ``training_record`` (``positional/schemes.yaml``), its options as the study's tasks
read them, and the sha256 of the modules its class imports (``scheme_sources``). The file is rewritten only where
it differs, and DVC compares its hash: a new scheme, or an edit to one the study does not list, re-runs nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pelab import io
from pelab.closure import NO_SCHEME, ROOT, closure, module_file
from pelab.params import Params
from pelab.positional import scheme_spec
from pelab.studies import STUDIES


def scheme_sources(scheme: str) -> str:
    """sha256 of the files scheme ``scheme``'s class module executes (its import closure; evaluation included)."""
    digest = hashlib.sha256()
    start = module_file(scheme_spec(scheme).module)
    if start is None:  # a class outside pelab (a plugin's, a test's): nothing of pelab's to hash
        return digest.hexdigest()
    for path in sorted(closure(start, None, NO_SCHEME, evaluation=True)):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


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


def write_scheme_records(params: Params, folder: str | Path) -> list[Path]:
    """``<folder>/<study>.json`` for every study with a stage per task, rewritten only where it differs."""
    written = []
    for study in (s for s in STUDIES if not s.per_scheme):
        path = Path(folder) / f"{study.name}.json"
        records = study_scheme_records(params, study.name)
        if not path.exists() or io.read_json(path) != records:
            io.write_json(path, records)
        written.append(path)
    return written
