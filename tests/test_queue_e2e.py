"""A multi-GPU box through DVC itself: experiments queued with `dvc exp run --queue` and run by `dvc queue start
-j 2` (two workers; on a GPU box, one GPU each through CUDA_VISIBLE_DEVICES: docs/experiments.md, "One box,
several GPUs") finish with intact, distinct results."""

from __future__ import annotations

import json
import subprocess

import pytest
from test_pipeline_e2e import ENV, copy_worktree, ran, run

from pelab.parallel import run_queue

pytestmark = pytest.mark.e2e

STUDY = ["profile=smoke", "tasks=[copy]", "length_tasks=[]", "lm_tasks=[]", "seeds=[0]"]


def test_two_queued_experiments_run_by_two_workers_finish_with_distinct_intact_results(repo_root, tmp_path):
    project = copy_worktree(repo_root, tmp_path / "repo")
    run(["pelab", "compose", *STUDY, "pe=none", "--out", "params.yaml"], project)
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-qm", "study"], project)

    for scheme, name in (("none", "exp-none"), ("rope", "exp-rope")):
        run(["dvc", "exp", "run", "--queue", "-n", name, *[a for s in STUDY for a in ("-S", s)], "-S", f"pe={scheme}"],
            project)
    status = run_queue(["exp-none", "exp-rope"], project, workers=2, poll_s=5, timeout_min=10, env=ENV)
    assert status == {"exp-none": "Success", "exp-rope": "Success"}, status
    shown = json.loads(subprocess.run(["dvc", "exp", "show", "--json"], cwd=project, capture_output=True,
                                      text=True, check=True).stdout)
    exps = {rev["name"]: rev for entry in shown for exp in entry.get("experiments") or []
            for rev in exp.get("revs", []) if rev.get("name") in ("exp-none", "exp-rope") and not rev.get("error")}
    assert set(exps) == {"exp-none", "exp-rope"}, shown
    for name, scheme in (("exp-none", "none"), ("exp-rope", "rope")):
        data = exps[name]["data"]
        metrics = data["metrics"]
        files = set(metrics)
        assert files == {f"reports/metrics/copy/{scheme}.json"}, (name, files)  # its own scheme only
        values = metrics[f"reports/metrics/copy/{scheme}.json"]["data"]
        assert set(values) == {"exact", "exact_long", "token_long"}
        assert all(0.0 <= v <= 1.0 for v in values.values())
        assert data["params"]["params.yaml"]["data"]["pe"]["schemes"] == [scheme]


PARALLEL = ["profile=smoke", "tasks=[copy]", "length_tasks=[reverse]", "lm_tasks=[]", "seeds=[0]", "pe=[none,rope]",
            "length_schemes=[none,rope]"]


def test_pelab_parallel_runs_the_shards_at_once_and_the_final_run_trains_and_evaluates_nothing_again(
        repo_root, tmp_path):
    """Issue 28's recipe on one machine: `pelab parallel -j 2` prepares the data once, queues two shards (copy none
    + reverse none, copy rope + reverse rope), runs them with two workers, then reproduces the whole study in the
    workspace, where every training and evaluation stage comes from the run cache: only aggregate and report run."""
    project = copy_worktree(repo_root, tmp_path / "repo")
    run(["pelab", "compose", *PARALLEL, "--out", "params.yaml"], project)
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-qm", "study"], project)
    try:
        out = run(["pelab", "parallel", "-j", "2", "--timeout-min", "10", *PARALLEL], project, timeout_s=15 * 60)
    finally:  # a killed `pelab parallel` leaves its workers running: they would take the next tests' cores
        subprocess.run(["dvc", "queue", "stop", "--kill"], cwd=project, env=ENV, capture_output=True, timeout=120)
    assert "queue shard-" in out and out.count("queue shard-") == 2, out
    # the length study is dealt by task (one stage runs every length scheme)
    assert "pe=[none] length_tasks=[reverse] lm_tasks=[]" in out and "pe=[rope] length_tasks=[] lm_tasks=[]" in out, out
    assert "failed" not in out, out
    # prepared once in the workspace; trained and evaluated in the shards only; nothing lost (all four schemes)
    assert ran(out, "prepare") | ran(out, "prepare_length") == {"prepare@copy", "prepare_length@reverse"}, out
    assert not ran(out, "run") | ran(out, "run_length")
    assert out.strip().endswith("the final run executed 2 stage(s): aggregate, report"), out
    for task, scheme in (("copy", "none"), ("copy", "rope"), ("reverse", "none"), ("reverse", "rope")):
        assert (project / "reports" / "metrics" / task / f"{scheme}.json").exists(), (task, scheme)
    assert "run@copy-rope" in (project / "pipelines/main/run/dvc.lock").read_text()
