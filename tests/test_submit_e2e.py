"""A study's shards as one job array (`pelab submit`, pelab/cluster.py), through submitit's local executor: the
same code path a Slurm array runs, each shard a clone of HEAD sharing the workspace's DVC cache, concurrently. Two
shards train one scheme each; the final run trains nothing and scores what one `dvc repro` of the same params
scores; a failed shard leaves its stage to the final run; a resubmit trains nothing a shard or the final run
finished. The SkyPilot task files are checked against SkyPilot's own loader where it is installed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_pipeline_e2e import copy_worktree, run

from pelab.cluster import check_committed, plan, skypilot_tasks, submit

pytestmark = pytest.mark.e2e

STUDY = ["profile=smoke", "tasks=[copy]", "length_tasks=[]", "lm_tasks=[]", "seeds=[0]", "pe.schemes=[none,rope]"]


@pytest.fixture(scope="module")
def workspace(repo_root, tmp_path_factory):
    return copy_worktree(repo_root, tmp_path_factory.mktemp("submit") / "origin")


def scores(repo: Path) -> dict:
    """What the report is computed from, times aside: the summary and the per-scheme metrics."""
    metrics = {p.name: json.loads(p.read_text()) for p in sorted((repo / "reports/metrics/copy").iterdir())}
    return {"summary": json.loads((repo / "reports/summary.json").read_text()), "metrics": metrics}


def test_two_shards_train_their_schemes_and_the_final_run_trains_nothing(workspace, monkeypatch, tmp_path):
    monkeypatch.setenv("TQDM_DISABLE", "1")  # the shards' logs without progress bars
    result = submit(STUDY, 2, workspace / "cluster", cluster="local", workspace=workspace, timeout_min=20,
                    echo=lambda line: None)
    assert result.states == {0: "done", 1: "done"}
    assert not [s for s in result.final_ran if s.rsplit(":", 1)[-1].startswith("run@")]  # restored, not trained
    assert any(s.endswith("report") for s in result.final_ran)
    for k, scheme in enumerate(["none", "rope"]):  # each shard a clone of its own, sharing the cache
        shard = workspace / "cluster" / f"shard-{k}" / "repo"
        assert (shard / "params.yaml").exists() and f"scheme: {scheme}" in (shard / "params.yaml").read_text()
    # one dvc repro of the same params, elsewhere: the same scores
    direct = copy_worktree(workspace, tmp_path / "direct")
    run(["pelab", "compose", *STUDY, "--out", "params.yaml"], direct)
    run(["dvc", "repro"], direct)
    assert scores(direct) == scores(workspace)  # a resubmit trains nothing: the next test


def test_a_failed_shard_leaves_its_stage_to_the_final_run_and_a_resubmit_trains_nothing(repo_root, monkeypatch,
                                                                                      tmp_path):
    monkeypatch.setenv("TQDM_DISABLE", "1")  # the shards' logs without progress bars
    origin = copy_worktree(repo_root, tmp_path / "origin")
    blocked = origin / "cluster" / "shard-1"
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a directory: shard 1 cannot clone here")
    result = submit(STUDY, 2, origin / "cluster", cluster="local", workspace=origin, timeout_min=20,
                    echo=lambda line: None)
    assert result.states[0] == "done" and result.states[1].startswith("failed: ")
    assert {s.rsplit(":", 1)[-1] for s in result.final_ran} >= {"run@copy-rope"}  # the failed shard's, trained here
    assert "run@copy-none" not in {s.rsplit(":", 1)[-1] for s in result.final_ran}
    blocked.unlink()
    again = submit(STUDY, 2, origin / "cluster", cluster="local", workspace=origin, timeout_min=20,
                   echo=lambda line: None)
    assert again.states == {0: "done", 1: "done"} and again.final_ran == []  # shard 1 restored what the final run made


def test_uncommitted_code_is_refused_in_one_line_before_anything_is_submitted(workspace, tmp_path):
    scratch = copy_worktree(workspace, tmp_path / "scratch")
    (scratch / "src/pelab/positional/rope.py").write_text("# edited\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^the shards clone HEAD, and 1 code or config file\(s\) differ from it "
                                         r"\(M src/pelab/positional/rope.py\): commit them first$"):
        check_committed(scratch)
    assert not (scratch / "cluster").exists()
    with pytest.raises(ValueError, match=r"^name the profile among the overrides"):
        plan(["tasks=[copy]"], 2, tmp_path, workspace)


def test_the_skypilot_tasks_are_the_same_shards_and_skypilot_loads_them(repo_root, workspace, tmp_path):
    import yaml

    paths = skypilot_tasks(STUDY, 2, tmp_path / "sky", workspace=workspace, accelerators="H100:1")
    assert [p.name for p in paths] == ["shard-0.yaml", "shard-1.yaml", "final.yaml"]
    tasks = [yaml.safe_load(p.read_text()) for p in paths]
    jobs, _ = plan(STUDY, 2, tmp_path, workspace)
    for task, job in zip(tasks, jobs):
        assert task["resources"] == {"accelerators": "H100:1"}
        assert "dvc fetch --run-cache" in task["setup"] and task["run"].endswith("&& dvc push --run-cache")
        assert all(part in task["run"] for part in job.share) and job.targets[0] in task["run"]
    assert "--pull" in tasks[-1]["run"]
    # SkyPilot's own loader, in the interpreter .ci/run gives it (SkyPilot pins click < 8.2, pelab's is newer)
    python = os.environ.get("PELAB_SKYPILOT_PYTHON") or str(repo_root / ".venv-skypilot/bin/python")
    if not Path(python).exists():
        pytest.skip("no SkyPilot interpreter: .ci/run makes .venv-skypilot (pip install skypilot)")
    check = ("import sys, sky\nfor p in sys.argv[1:]:\n    print(sky.Task.from_yaml(p).name)")
    out = subprocess.run([python, "-c", check, *map(str, paths)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [t["name"] for t in tasks]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**tasks[0], "resourcez": {}}))  # the loader refuses a key it does not know
    refused = subprocess.run([python, "-c", check, str(bad)], capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "resourcez" in refused.stderr
