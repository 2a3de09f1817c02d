"""Same seed -> same data, same initial weights, bit-identical metrics on CPU; failures leave nothing behind."""

from __future__ import annotations

import pytest
import torch
from conftest import smoke_params, smoke_raw

from pelab import io
from pelab.runner.evaluate import evaluate_run
from pelab.runner.train import train_run
from pelab.tasks import get_task
from pelab.tasks.copy.model import build_copy_model


def test_rerun_gives_bit_identical_metrics(tmp_path):
    params = smoke_params(tmp_path, seeds=[3])
    get_task("copy").prepare(params.task("copy"), tmp_path / "data")
    outputs = []
    for attempt in range(2):
        run = tmp_path / f"run{attempt}"
        train_run(params, "copy", "rope", 3, tmp_path / "data", run, device="cpu")
        evaluate_run(params, run, tmp_path / "data", tmp_path / f"eval{attempt}", device="cpu")
        records = [r for r in io.read_jsonl(tmp_path / f"eval{attempt}" / "records.jsonl") if r["split"] != "eval"]
        weights = torch.load(run / "model.pt", weights_only=True)
        outputs.append((records, weights, (run / "history.csv").read_text()))
    (rec_a, w_a, hist_a), (rec_b, w_b, hist_b) = outputs
    assert rec_a == rec_b and len(rec_a) > 4
    assert hist_a == hist_b
    for name in w_a:
        assert torch.equal(w_a[name], w_b[name]), name


def test_same_seed_shares_initial_weights_across_schemes(tmp_path):
    cfg = smoke_params(tmp_path).task("copy")
    models = {s: build_copy_model(s, cfg.data.vocab_size, cfg.model, cfg.options(s), seed=7)
              for s in ("none", "learned", "t5", "rope")}
    shared = {k: v for k, v in models["none"].state_dict().items()}
    for scheme, model in models.items():
        state = model.state_dict()
        for name, tensor in shared.items():
            assert torch.equal(state[name], tensor), (scheme, name)
    other_seed = build_copy_model("none", cfg.data.vocab_size, cfg.model, cfg.options("none"), seed=8)
    assert not torch.equal(other_seed.state_dict()["head.weight"], shared["head.weight"])


def test_failed_training_leaves_no_partial_output(tmp_path):
    params = smoke_params(tmp_path)
    get_task("copy").prepare(params.task("copy"), tmp_path / "data")
    (tmp_path / "data" / "dataset.pt").unlink()  # the data is gone
    with pytest.raises(FileNotFoundError, match="no prepared copy data"):
        train_run(params, "copy", "none", 0, tmp_path / "data", tmp_path / "run", device="cpu")
    assert not (tmp_path / "run").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run.")]


def test_a_diverged_run_stops_at_once_naming_task_scheme_seed_step_and_lr(tmp_path):
    raw_copy = smoke_raw()["copy"]
    raw_train = raw_copy["train"]
    params = smoke_params(tmp_path, copy={**raw_copy, "train": {**raw_train, "lr": 1e9}})
    get_task("copy").prepare(params.task("copy"), tmp_path / "data")
    with pytest.raises(ValueError, match=r"training diverged: loss (nan|inf) at step \d+ \(task copy, scheme rope, "
                                         r"seed 0, lr [0-9.e+]+\); lower the learning rate"):
        train_run(params, "copy", "rope", 0, tmp_path / "data", tmp_path / "run", device="cpu")
    assert not (tmp_path / "run").exists()


def test_a_run_reloads_from_the_config_saved_beside_its_weights(tmp_path):
    from pelab.runner.checkpoint import load_run

    params = smoke_params(tmp_path)
    get_task("copy").prepare(params.task("copy"), tmp_path / "data")
    train_run(params, "copy", "t5", 1, tmp_path / "data", tmp_path / "run", device="cpu")
    run = load_run(tmp_path / "run")  # no params needed
    assert (run.task, run.scheme, run.seed) == ("copy", "t5", 1)
    assert run.model.pe.num_buckets == params.task("copy").options("t5").num_buckets
    saved = torch.load(tmp_path / "run" / "model.pt", weights_only=True)
    for name, tensor in run.model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name


def test_evaluation_runs_on_the_requested_device(tmp_path, monkeypatch):
    """The review found evaluation left every model on the CPU. The runner moves the reloaded model to the
    device params ask for (checked here without CUDA: the device plumbing is recorded, not executed)."""
    import pelab.runner.evaluate as runner_evaluate

    params = smoke_params(tmp_path)
    get_task("copy").prepare(params.task("copy"), tmp_path / "data")
    train_run(params, "copy", "none", 0, tmp_path / "data", tmp_path / "run", device="cpu")
    asked, moved = [], []
    real_pick, real_load = runner_evaluate.pick_device, runner_evaluate.load_run

    def pick(requested):
        asked.append(requested)
        return real_pick("cpu")

    def load(path):
        run = real_load(path)
        to = run.model.to
        run.model.to = lambda device, *a, **k: (moved.append(str(device)), to(device, *a, **k))[1]
        return run

    monkeypatch.setattr(runner_evaluate, "pick_device", pick)
    monkeypatch.setattr(runner_evaluate, "load_run", load)
    evaluate_run(params, tmp_path / "run", tmp_path / "data", tmp_path / "eval", device="cuda:1")
    assert asked == ["cuda:1"] and moved and set(moved) == {"cpu"}  # the picked device, not left where loaded
    assert io.read_json(tmp_path / "eval" / "device.json") == {"device": "cpu", "name": "cpu"}


def test_deterministic_algorithms_are_switched_on_without_importing_inductor():
    """What every training stage sets: torch's deterministic mode (warn only), the same flags as the public
    ``torch.use_deterministic_algorithms``, without its import of torch._inductor (~2 s of each stage's start)."""
    import subprocess
    import sys

    code = ("import sys, torch\n"
            "from pelab.device import use_deterministic_algorithms\n"
            "use_deterministic_algorithms()\n"
            "print(torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),"
            " 'torch._inductor' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "False"]
