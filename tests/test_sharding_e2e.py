"""Scale-out through DVC itself: two clones each train half of the schemes and push their runs (with DVC's run
cache) to one shared remote; a third clone fetches them and reproduces the whole report without training anything.
The recipe is docs/experiments.md, "Sharding a study across machines"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_pipeline_e2e import ENV, copy_worktree, ran, run

pytestmark = pytest.mark.e2e

STUDY = ["profile=smoke", "tasks=[copy]", "length_tasks=[]", "lm_tasks=[]", "seeds=[0]"]


def clone(origin: Path, dest: Path, remote: Path, schemes: list[str]) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True, env=ENV)
    run(["dvc", "remote", "add", "--local", "-d", "shared", str(remote)], dest)
    run(["pelab", "compose", *STUDY, f"pe.schemes=[{','.join(schemes)}]", "--out", "params.yaml"], dest)
    return dest


def test_two_shards_push_their_runs_and_a_third_clone_reproduces_the_report_without_training(
        repo_root, tmp_path):
    origin = copy_worktree(repo_root, tmp_path / "origin")
    remote = tmp_path / "remote"
    remote.mkdir()

    for shard in (["none"], ["rope"]):  # one machine per scheme
        machine = clone(origin, tmp_path / f"shard_{shard[0]}", remote, shard)
        out = run(["dvc", "repro"], machine)
        assert ran(out, "run") == {f"run@copy-{shard[0]}"}
        run(["dvc", "push", "--run-cache"], machine)

    whole = clone(origin, tmp_path / "whole", remote, ["none", "rope"])
    run(["dvc", "fetch", "--run-cache"], whole)  # the run-cache entries
    out = run(["dvc", "repro", "--pull"], whole)  # --pull: each restored stage's outputs come from the remote
    assert ran(out, "run") == set()  # both restored from the run cache
    assert "Running stage 'report'" in out
    assert sorted(p.name for p in (whole / "reports/metrics/copy").iterdir()) == ["none.json", "rope.json"]
    summary = json.loads((whole / "reports/summary.json").read_text())
    assert set(summary["copy"]) == {"none", "rope"}
    assert "`rope`" in (whole / "reports/report.md").read_text()
