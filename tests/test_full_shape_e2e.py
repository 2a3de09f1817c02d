"""The full profile's shapes through the real `dvc repro`, on the CPU (issue 28): the full-size models, training
batches, sequence and evaluation lengths, vocabularies and beam, with two optimiser steps (the LM one) and the evaluation data
cut to a handful (conf/profile/full_shape.yaml), every study (two of the six length tasks, an encoder and a
decoder) with the schemes whose shapes depend on the profile. A shape or config error at full size fails CI here
instead of a GPU lease."""

from __future__ import annotations

import json

import pytest
import yaml
from test_pipeline_e2e import copy_worktree, ran, run

from pelab.compose import compose_params

# Not in the default run (pyproject's addopts): 10.6 minutes of the suite's 25 on two cores, where the default study
# must run every scheme and task (benchmarks/results/suite_time.md, 2026-11-28 (2)). Run it before a GPU lease:
# `python -m pytest -m full_shape` (or `bash benchmarks/gpu/start.sh profile=full_shape ...` on the GPU).
pytestmark = [pytest.mark.e2e, pytest.mark.full_shape]

# one seed: the LM and translation train their seeds one after another on a CPU, so a second seed repeats their
# shapes at twice the time; the stacked step is checked against single runs in tests/test_training_loop.py, and at
# the full shapes with five seeds on a GPU (benchmarks/gpu/start.sh profile=full_shape)
OVERRIDES = ["profile=full_shape", "pe=[learned,rope,t5,fire]", "device=cpu", "seeds=[0]"]


def test_the_full_profile_s_shapes_run_through_every_stage(repo_root, tmp_path):
    full = compose_params(repo_root / "conf", ["profile=full"])
    shaped = compose_params(repo_root / "conf", OVERRIDES)
    for study in ("copy", "translation", "length", "lm"):  # the full profile's shapes, unchanged
        assert shaped[study]["model"] == full[study]["model"], study
        assert shaped[study]["train"]["batch_size"] == full[study]["train"]["batch_size"], study
    assert shaped["translation"]["eval"]["decode"] == full["translation"]["eval"]["decode"]
    assert shaped["lm"]["data"]["vocab_size"] == full["lm"]["data"]["vocab_size"]
    assert shaped["lm"]["data"]["context"] == full["lm"]["data"]["context"]
    assert (shaped["length"]["data"]["train_max"], shaped["length"]["data"]["test_max"]) == (
        full["length"]["data"]["train_max"], full["length"]["data"]["test_max"])

    project = copy_worktree(repo_root, tmp_path / "repo")
    run(["pelab", "compose", *OVERRIDES, "--out", "params.yaml"], project)
    out = run(["dvc", "repro"], project)
    stages = {line.split()[0].rsplit(":", 1)[-1]
              for line in run(["dvc", "stage", "list", "--all"], project).splitlines() if line.strip()}
    assert ran(out, "") == stages
    assert len(ran(out, "run")) == 2 * 4 and len(ran(out, "run_length")) == 2 and len(ran(out, "run_lm")) == 3
    params = yaml.safe_load((project / "params.yaml").read_text())
    for task, schemes in ((t, params["pe"]["schemes"]) for t in params["tasks"]):
        for scheme in schemes:
            for seed in params["seeds"]:
                meta = json.loads((project / f"runs/{task}/{scheme}/seed_{seed}/run.json").read_text())
                assert meta["model"] == full[task]["model"], (task, scheme)
    for task in ("lm", "translation"):  # the BPEs reach the full vocabularies
        vocab = json.loads((project / f"runs/{task}/learned/seed_0/run.json").read_text())["info"]["vocab_size"]
        assert vocab == full[task]["data"]["vocab_size"], task
    assert (project / "reports/report.md").exists()
