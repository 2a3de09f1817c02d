"""`pelab parallel`'s shard plan (pelab.parallel): every scheme of every study (every task of the length study,
which runs one stage per task) in exactly one shard, the studies a shard holds nothing of left out of it; the
queue's polling, with DVC faked; the DVC run itself is tests/test_queue_e2e.py's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import ROOT

from pelab.compose import compose_params
from pelab.parallel import shard_overrides, shard_targets, without_keys


def test_the_schemes_of_every_study_are_dealt_round_robin_and_each_lands_in_one_shard():
    composed = {"tasks": ["copy", "translation"], "pe": {"schemes": ["none", "rope", "alibi"]},
                "length_tasks": ["reverse"], "length_schemes": ["none", "rope"],
                "lm_tasks": ["lm"], "lm_schemes": ["alibi"]}
    # the length study by task (its stage runs every length scheme): the shard's stage is the whole study's
    assert shard_overrides(composed, 2) == [
        ["pe=[none,alibi]", "length_tasks=[]", "lm_schemes=[alibi]"],
        ["pe=[rope]", "length_tasks=[reverse]", "lm_tasks=[]"],
    ]
    assert shard_overrides(composed, 1) == [["pe=[none,rope,alibi]", "length_tasks=[reverse]",
                                             "lm_schemes=[alibi]"]]
    # more workers than schemes and tasks: the empty shards are dropped
    assert len(shard_overrides(composed, 10)) == 5
    # a study that is off (no tasks) contributes no scheme
    assert shard_overrides({**composed, "length_tasks": [], "lm_tasks": []}, 2) == [
        ["pe=[none,alibi]", "length_tasks=[]", "lm_tasks=[]"], ["pe=[rope]", "length_tasks=[]", "lm_tasks=[]"]]


def test_the_default_study_s_shards_cover_every_stage_once():
    composed = compose_params(ROOT / "conf", ["profile=quick"])
    shards = shard_overrides(composed, 3)
    dealt = {key: [] for key in ("pe", "length_tasks", "lm_schemes")}
    for shard in shards:
        for override in shard:
            key, value = override.split("=", 1)
            if key in dealt:
                dealt[key] += [v for v in value.strip("[]").split(",") if v]  # `length_tasks=[]`: none
    assert sorted(dealt["pe"]) == sorted(composed["pe"]["schemes"])
    assert sorted(dealt["length_tasks"]) == sorted(composed["length_tasks"])
    assert sorted(dealt["lm_schemes"]) == sorted(composed["lm_schemes"])


def test_no_workers_is_refused_with_one_line():
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        shard_overrides({"tasks": [], "length_tasks": [], "lm_tasks": []}, 0)


def test_a_shard_runs_its_studies_evaluation_and_its_own_choice_replaces_the_user_s():
    shard = ["pe=[rope]", "length_tasks=[]", "lm_schemes=[alibi]"]
    main, lm = "pipelines/main/run/dvc.yaml:run", "pipelines/lm/run/dvc.yaml:run_lm"
    assert shard_targets(shard) == [main, lm]
    tuned = {"tune": {"tasks": ["copy"], "length_tasks": ["reverse"], "lm_tasks": []}}
    assert shard_targets(shard, tuned) == [main, lm, "pipelines/main/tune/dvc.yaml:tune"]
    length = ["pe=[rope]", "length_tasks=[reverse]", "tune.length_tasks=[]", "lm_tasks=[]"]
    assert shard_targets(length, tuned) == [main, "pipelines/length/run/dvc.yaml:run_length",
                                            "pipelines/main/tune/dvc.yaml:tune"]


def test_a_shard_that_leaves_a_tuned_study_or_task_out_tunes_none_of_it():
    composed = {"tasks": ["copy"], "pe": {"schemes": ["none", "rope"]}, "length_tasks": ["reverse", "addition"],
                "length_schemes": ["rope"], "lm_tasks": [],
                "tune": {"tasks": ["copy"], "length_tasks": ["reverse"], "lm_tasks": []}}
    assert shard_overrides(composed, 3) == [
        ["pe=[none]", "length_tasks=[addition]", "tune.length_tasks=[]", "lm_tasks=[]"],
        ["pe=[rope]", "length_tasks=[]", "tune.length_tasks=[]", "lm_tasks=[]"],
        ["tasks=[]", "tune.tasks=[]", "length_tasks=[reverse]", "tune.length_tasks=[reverse]", "lm_tasks=[]"]]
    user = ["profile=quick", "pe.schemes=[none,rope]", "+pe.selected.x=y", "length_tasks=[reverse]", "seeds=[0]",
            "lm.train.steps=10"]
    assert without_keys(user, {"pe", "length_tasks", "lm_schemes"}) == ["profile=quick", "seeds=[0]",
                                                                      "lm.train.steps=10"]


def test_parallel_asks_for_the_profile_before_it_runs_anything(tmp_path):
    from pelab.parallel import run_in_parallel

    with pytest.raises(ValueError, match=r"name the profile among the overrides \(e.g. profile=full\)"):
        run_in_parallel(["pe=[rope]"], 2, cwd=tmp_path)


STATUS = """Task     Name            Created    Status
9294987  shard-x-0       10:01 AM   Success
22c83f3  shard-x-1       10:01 AM   Queued
6f3c8e9  other           10:00 AM   Running

Worker status: 0 active, 0 idle
"""


def test_the_queue_s_status_gives_each_experiment_s_state_and_the_workers_alive():
    from pelab.parallel import queue_state

    assert queue_state(STATUS, ["shard-x-0", "shard-x-1", "shard-x-2"]) == (
        {"shard-x-0": "Success", "shard-x-1": "Queued", "shard-x-2": ""}, 0)
    assert queue_state(STATUS.replace("0 active, 0 idle", "1 active, 2 idle"), ["other"]) == ({"other": "Running"}, 3)
    assert queue_state("", ["shard-x-0"]) == ({"shard-x-0": ""}, None)


def test_the_queue_is_started_again_when_its_workers_exit_with_experiments_still_queued(monkeypatch, tmp_path):
    """github.com/treeverse/dvc/issues/10562: a worker can exit with tasks left queued; `pelab parallel` starts the
    missing workers again instead of waiting for ever, and gives up (stopping the queue) at its deadline."""
    import pelab.parallel as parallel

    calls, clock = [], [0.0]
    statuses = iter([STATUS] * 8 + [STATUS.replace("Queued", "Running").replace("0 active", "1 active")] * 2
                    + [STATUS.replace("Queued", "Success")])

    def dvc(args, cwd, env=None, tee=None, check=True, timeout_s=None):
        calls.append(" ".join(args))
        return next(statuses) if args == ["queue", "status"] else ""

    monkeypatch.setattr(parallel, "_dvc", dvc)
    monkeypatch.setattr(parallel, "time", SimpleNamespace(time=lambda: clock[0],
                                                          sleep=lambda s: clock.__setitem__(0, clock[0] + s)))
    said = []
    status = parallel.run_queue(["shard-x-0", "shard-x-1"], tmp_path, 2, poll_s=10, echo=said.append)
    assert status == {"shard-x-0": "Success", "shard-x-1": "Success"}
    starts = [i for i, c in enumerate(calls) if c == "queue start -j 2"]
    assert len(starts) == 3 and starts[0] == 0  # first start, then again after 30 s stalled, twice in 8 polls
    assert calls[-1] == "queue stop" and said[0].startswith("no queue worker alive for 30 s with 1 experiment(s)")

    statuses, clock[0], calls[:] = iter([STATUS] * 1000), 0.0, []
    monkeypatch.setattr(parallel, "STALL_S", 1e9)
    with pytest.raises(ValueError, match=r"did not finish within 2 minutes: .*'shard-x-1': 'Queued'"):
        parallel.run_queue(["shard-x-0", "shard-x-1"], tmp_path, 2, poll_s=10, timeout_min=2, echo=said.append)
    assert calls[-1] == "queue stop --kill"
