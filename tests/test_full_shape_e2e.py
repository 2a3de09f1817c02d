"""The full profile's shapes through the real `dvc repro`, on the CPU (issue 28): the full-size models, batch
sizes, sequence and evaluation lengths, vocabularies and beam, with two optimiser steps and the data cut to a
handful (conf/profile/full_shape.yaml), every task of every study and the schemes whose shapes depend on the
profile. A shape, memory or config error at full size fails CI here instead of a GPU lease."""

from __future__ import annotations

import json

import pytest
import yaml
from test_pipeline_e2e import copy_worktree, ran, run

from pelab.compose import compose_params

pytestmark = pytest.mark.e2e

OVERRIDES = ["profile=full_shape", "pe=[learned,rope,t5,fire]", "device=cpu"]


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
    assert shaped["seeds"] == full["seeds"]

    project = copy_worktree(repo_root, tmp_path / "repo")
    run(["pelab", "compose", *OVERRIDES, "--out", "params.yaml"], project)
    out = run(["dvc", "repro"], project)
    stages = {line.split()[0] for line in run(["dvc", "stage", "list"], project).splitlines() if line.strip()}
    assert ran(out, "") == stages
    assert len(ran(out, "train")) == 2 * 4 and len(ran(out, "train_length")) == 2 * 3 and len(ran(out, "train_lm")) == 3
    params = yaml.safe_load((project / "params.yaml").read_text())
    for task, schemes in ((t, params["pe"]["schemes"]) for t in params["tasks"]):
        for scheme in schemes:
            for seed in params["seeds"]:
                meta = json.loads((project / f"runs/{task}/{scheme}/seed_{seed}/run.json").read_text())
                assert meta["model"] == full[task]["model"], (task, scheme)
    vocab = json.loads((project / "runs/lm/xpos/seed_0/run.json").read_text())["info"]["vocab_size"]
    assert vocab == full["lm"]["data"]["vocab_size"]  # the BPE reaches the full vocabulary on the cut text
    assert (project / "reports/report.md").exists()
