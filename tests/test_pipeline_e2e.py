"""The real pipeline, end to end: `dvc repro` and `dvc exp run -S ...` on the smoke profile in a
temporary copy of the repository. Checks outputs exist and hold sane values, that choosing one
scheme re-runs only that scheme, and that `dvc metrics diff` reports per-scheme changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pelab.positional import scheme_names

pytestmark = pytest.mark.e2e

GIT_ENV = {"GIT_AUTHOR_NAME": "pelab-test", "GIT_AUTHOR_EMAIL": "test@pelab.invalid",
           "GIT_COMMITTER_NAME": "pelab-test", "GIT_COMMITTER_EMAIL": "test@pelab.invalid"}


def run(cmd: list[str], cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV, "TQDM_DISABLE": "1"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


def trained_stages(output: str) -> set[str]:
    """Stages that actually ran training (not skipped, not restored from the run cache)."""
    return {line.split("'")[1] for line in output.splitlines()
            if line.startswith("Running stage 'train_")}


@pytest.fixture(scope="module")
def project(repo_root, tmp_path_factory) -> Path:
    """A copy of the working tree (tracked and untracked-but-not-ignored files) as a fresh git repo."""
    dest = tmp_path_factory.mktemp("pelab") / "repo"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=repo_root,
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        src = repo_root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    # The shared data lives beside the checkout; keep the same relative path in the copy.
    shared = repo_root.parent / "shared"
    if shared.exists():
        (dest.parent / "shared").symlink_to(shared)
    run(["git", "init", "-q"], dest)
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-qm", "copy"], dest)
    run(["pelab", "compose", "profile=smoke", "--out", "params.yaml"], dest)
    out = run(["dvc", "repro"], dest)
    assert trained_stages(out) >= {f"train_copy@{s}" for s in scheme_names()}
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-qm", "smoke results"], dest)
    return dest


def test_repro_writes_metrics_report_and_figures(project):
    metrics = json.loads((project / "reports/metrics.json").read_text())
    assert set(metrics["copy"]) == set(scheme_names())
    for scheme, entry in metrics["copy"].items():
        assert entry["n_seeds"] == 5, scheme
        for key in ("exact_match_mean", "token_accuracy_mean", "test_long_exact_match_mean"):
            assert 0.0 <= entry[key] <= 1.0, (scheme, key, entry[key])
        assert entry["exact_match_ci_low"] <= entry["exact_match_mean"] <= entry["exact_match_ci_high"]
        assert entry["exact_match_sd"] >= 0.0
    report = (project / "reports/report.md").read_text()
    assert "Profile **smoke**" in report
    for scheme in scheme_names():
        assert f"`{scheme}`" in report
    figures = list((project / "reports/figures").glob("*.png"))
    assert len(figures) >= 3 and all(f.stat().st_size > 5000 for f in figures)
    for link in [line.split("(")[1].rstrip(")") for line in report.splitlines() if line.startswith("![")]:
        assert (project / "reports" / link).exists(), link
    records = (project / "reports/records.csv").read_text().splitlines()
    assert records[0].split(",")[:3] == ["task", "pe", "seed"]


def test_repro_again_is_a_no_op(project):
    out = run(["dvc", "repro"], project)
    assert "Running stage" not in out


def test_exp_run_one_scheme_reuses_cached_runs_and_metrics_diff(project):
    out = run(["dvc", "exp", "run", "-S", "profile=smoke", "-S", "pe=alibi"], project)
    assert trained_stages(out) == set()  # alibi already trained with these params
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["pe"]["schemes"] == ["alibi"]
    metrics = json.loads((project / "reports/metrics.json").read_text())
    assert set(metrics["copy"]) == {"alibi"}

    out = run(["dvc", "exp", "run", "-S", "profile=smoke", "-S", "pe=alibi", "-S", "copy.train.steps=25"], project)
    assert trained_stages(out) == {"train_copy@alibi"}
    diff = run(["dvc", "metrics", "diff", "--all"], project)
    assert "copy.alibi.exact_match_mean" in diff

    out = run(["dvc", "exp", "run", "-S", "profile=smoke"], project)  # back to every scheme
    assert trained_stages(out) == set()  # restored from the run cache, nothing retrained
    metrics = json.loads((project / "reports/metrics.json").read_text())
    assert set(metrics["copy"]) == set(scheme_names())
