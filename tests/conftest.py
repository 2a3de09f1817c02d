"""Shared fixtures: the repository root, the read-only shared data beside it, and smoke-sized params."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# Under pytest-xdist (pyproject's addopts: a worker per core) each worker gets its share of the cores, for its own
# torch and for every process it starts (the end-to-end tests' DVC stages inherit it): two workers' torch thread
# pools on two cores would spin against each other. Set before torch is imported; a value of the user's wins.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // WORKERS)))


def pytest_collection_modifyitems(config, items) -> None:
    """The end-to-end tests first (each file is one worker's unit of work, ``--dist loadfile``), so that the workers
    start on the long ones and the unit tests fill in around them."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)  # stable: file order otherwise kept


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return SHARED


@functools.lru_cache(maxsize=1)
def _smoke_composed() -> dict:
    from pelab.compose import compose_params

    return compose_params(ROOT / "conf", ["profile=smoke"])


def smoke_raw(**changes) -> dict:
    """The smoke profile's composition (a dict), with top-level keys replaced by ``changes``. Every study but the
    main one is left out (its tasks list empty: ``length_tasks: []``, …, from the study records, so a new study is
    left out too) unless ``changes`` names it. Composed once per worker (Hydra takes 0.2 s a composition, and the
    generated matrix asks some 600), a fresh copy each call."""
    from pelab.studies import STUDIES

    composed = copy.deepcopy(_smoke_composed())
    composed.update({**{s.tasks_key: [] for s in STUDIES[1:] if "." not in s.tasks_key}, **changes})
    return composed


def smoke_params(tmp_path: Path, **changes):
    """Smoke params written to ``tmp_path/params.yaml`` and loaded (validated) from there."""
    from pelab.params import load_params

    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(smoke_raw(**changes)))
    return load_params(path)


def study_of(params):
    """The study as the report reads it: reports/study.json (``aggregate.study_record``) through JSON, as ``Study``."""
    import json

    from pelab.aggregate import study_record
    from pelab.report.study import Study

    return Study(json.loads(json.dumps(study_record(params))))
