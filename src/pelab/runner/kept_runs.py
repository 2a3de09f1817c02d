"""The finished runs of one (task, scheme) kept outside DVC's outputs, so that adding a seed trains only that
seed and a killed training stage loses only the training in progress.

DVC deletes a stage's outputs before it runs it again, and the seeds of a (task, scheme) are one stage (or part of
one: the length study's runs every scheme of a task). Its finished runs are therefore also kept, as hard links (no second copy on disk), in ``<folder>/seed_<k>``, and
a copy of their live curves (appended to as they are logged) in ``<folder>/live_<k>``; ``<folder>/state.pt`` holds the state of the training in progress
(``training.loop.train``). A kept run is reused only if it was trained from exactly what the stage would train
it from now: ``identity`` (task, scheme, model and training sections, options, data info, device type and
precision) and ``fingerprint`` (the prepared data, the pelab modules training imports for that task and scheme, less
the tasks' scoring methods, the scheme's entry in ``positional/schemes.yaml``, and torch's version);
and, where training draws random numbers (dropout, randomized positions), in the same stack of seeds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from pelab import io
from pelab.runner.checkpoint import RUN_FILE, WEIGHTS

def fingerprint_sources(task: str, scheme: str) -> list[Path]:
    """The pelab modules a kept run of ``task`` and ``scheme`` is trained from: the import closure of the training
    code (``pelab.runner.train``) for that task and scheme, the same rule that writes the training stages' deps in
    dvc.yaml (``pelab.closure``). An evaluation edit, or an edit to another scheme's module, never retrains a kept
    run; the tuning stage's choice of rate is in the run's identity."""
    from pelab.closure import PACKAGE, closure

    rule = PACKAGE / "closure.py"  # the closure rule itself, imported here: not what a run is trained from
    return sorted(p for p in closure(PACKAGE / "runner/train.py", task, scheme, evaluation=False) if p != rule)


def fingerprint(data_dir: str | Path, task: str, scheme: str) -> str:
    """sha256 of the prepared data's files, of ``fingerprint_sources``, of the scheme's entry in ``schemes.yaml`` (its
    ``training_record``: never the whole file, so adding a scheme changes no other's) and of torch's version: a kept
    run trained under another one is retrained."""
    from pelab.closure import PACKAGE, training_source
    from pelab.positional.registry import scheme_spec

    digest = hashlib.sha256(torch.__version__.encode())
    digest.update(json.dumps(scheme_spec(scheme).training_record(), sort_keys=True).encode())
    for path in fingerprint_sources(task, scheme):  # what training executes of each (``closure.training_source``)
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(training_source(path))
    data = Path(data_dir)
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(data)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class KeptRuns:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.state_file = self.folder / "state.pt"

    def restore(self, seed: int, identity: dict[str, Any], out_dir: str | Path, live_dir: str | Path | None,
                stack: list[int] | None = None) -> bool:
        """Put the kept run of ``seed`` in ``out_dir`` (and its curves in ``live_dir``) if it was trained from
        ``identity`` (and, if ``stack`` is given, together with exactly those seeds); whether it was."""
        kept = self.folder / f"seed_{seed}"
        if not (kept / RUN_FILE).exists() or not (kept / WEIGHTS).exists():
            return False
        run = io.read_json(kept / RUN_FILE)
        if run.get("seed") != seed or any(run.get(key) != value for key, value in identity.items()):
            return False
        if stack is not None and run.get("stack") != stack:
            return False
        if live_dir is not None:
            if not (self.folder / f"live_{seed}").exists():
                return False  # kept without its curves: retrained, so the stage's curves are complete
            shutil.rmtree(live_dir, ignore_errors=True)
            shutil.copytree(self.folder / f"live_{seed}", live_dir)
        with io.atomic_dir(out_dir) as tmp:
            _link_tree(kept, tmp)
        return True

    def keep(self, seed: int, out_dir: str | Path, live_dir: str | Path | None) -> None:
        """Keep the finished run in ``out_dir`` (and its curves) for the next run of the stage."""
        with io.atomic_dir(self.folder / f"seed_{seed}") as tmp:
            _link_tree(Path(out_dir), tmp)
        if live_dir is not None and Path(live_dir).exists():
            with io.atomic_dir(self.folder / f"live_{seed}") as tmp:
                shutil.copytree(live_dir, tmp, dirs_exist_ok=True)


def _link_tree(source: Path, target: Path) -> None:
    """``target`` gets ``source``'s files as hard links (copies where the filesystem has none). Safe because a
    run directory's files are only ever written whole (``io.atomic_dir``), never appended to."""
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link, dirs_exist_ok=True)
