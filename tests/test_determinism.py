"""Same seed -> same data, same initial weights, bit-identical metrics on CPU."""

from __future__ import annotations

import pytest
import torch
import yaml

from pelab import copy_study, io
from pelab.compose import compose_params
from pelab.config import load_params
from pelab.model.copy_model import build_copy_model


def smoke_params(repo_root, tmp_path, seeds=(3,)):
    composed = compose_params(repo_root / "conf", ["profile=smoke"])
    composed["seeds"] = list(seeds)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(composed))
    return load_params(path)


def test_rerun_gives_bit_identical_metrics(repo_root, tmp_path):
    params = smoke_params(repo_root, tmp_path)
    copy_study.prepare(params, tmp_path / "data")
    outputs = []
    for attempt in range(2):
        run_dir = tmp_path / f"run{attempt}"
        copy_study.train_scheme(params, "rope", tmp_path / "data", run_dir, device="cpu")
        copy_study.evaluate_scheme(params, "rope", tmp_path / "data", run_dir, tmp_path / f"eval{attempt}")
        records = [r for r in io.read_jsonl(tmp_path / f"eval{attempt}" / "records.jsonl") if r["split"] != "train"]
        weights = torch.load(run_dir / "seed_3" / "model.pt", weights_only=True)
        outputs.append((records, weights, (run_dir / "seed_3" / "history.csv").read_text()))
    (rec_a, w_a, hist_a), (rec_b, w_b, hist_b) = outputs
    assert rec_a == rec_b
    assert hist_a == hist_b
    for name in w_a:
        assert torch.equal(w_a[name], w_b[name]), name


def test_same_seed_shares_initial_weights_across_schemes(repo_root, tmp_path):
    params = smoke_params(repo_root, tmp_path)
    cfg = params.copy
    models = {s: build_copy_model(s, cfg.task.vocab_size, cfg.model, params.positional, seed=7)
              for s in ("none", "learned", "t5", "rope")}
    shared = {k: v for k, v in models["none"].state_dict().items()}
    for scheme, model in models.items():
        state = model.state_dict()
        for name, tensor in shared.items():
            assert torch.equal(state[name], tensor), (scheme, name)
    other_seed = build_copy_model("none", cfg.task.vocab_size, cfg.model, params.positional, seed=8)
    assert not torch.equal(other_seed.state_dict()["head.weight"], shared["head.weight"])


def test_failed_training_leaves_no_partial_output(repo_root, tmp_path):
    params = smoke_params(repo_root, tmp_path, seeds=(0, 1))
    copy_study.prepare(params, tmp_path / "data")
    (tmp_path / "data" / "seed_1.pt").unlink()  # the second seed's data is missing
    with pytest.raises(FileNotFoundError):
        copy_study.train_scheme(params, "none", tmp_path / "data", tmp_path / "run", device="cpu")
    assert not (tmp_path / "run").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run.")]
