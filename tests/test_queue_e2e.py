"""A multi-GPU box through DVC itself: experiments queued with `dvc exp run --queue` and run by `dvc queue start
-j 2` (two workers; on a GPU box, one GPU each through CUDA_VISIBLE_DEVICES: docs/experiments.md, "One box,
several GPUs") finish with intact, distinct results: `pelab parallel` queues two shards of different schemes, two
workers run them at once, and the whole study's run then restores each shard's runs from the run cache, training
and scoring nothing again (a separate test of two plain queued experiments, the same queue and workers, cost the
suite two minutes: benchmarks/results/suite_time.md, 2026-11-28 (5))."""

from __future__ import annotations

import subprocess

import pytest
from test_pipeline_e2e import ENV, copy_worktree, ran, run

pytestmark = pytest.mark.e2e

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
