"""Every registered scheme × every registered task, generated from the registries (a new scheme or task is
covered with no edit here): a pair the task cannot run is refused with one line when params load; every other
pair trains a few steps through each training path its task has (seeds stacked as one vectorised model, and
one by one), reloads with ``load_run`` and evaluates. The two paths must train the same runs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from conftest import smoke_raw

from pelab.params import parse_params
from pelab.positional import scheme_names
from pelab.positional.randomized import RandomizedPositions
from pelab.runner.checkpoint import load_run, run_dir
from pelab.runner.evaluate import evaluate_run
from pelab.runner.train import train_runs
from pelab.studies import study_of
from pelab.tasks import TASKS, get_task, task_names

SEEDS = [0, 1]
# The length problems share one model, runner and training paths, and differ in their data only: every scheme runs on
# one problem per architecture, every problem with a scheme of each kind (no positions, a rotation, a bias, a content
# bias, its own normalisation, drawn positions). The default study (test_default_study_e2e.py) runs every (length
# task, scheme) pair end to end.
LENGTH_EVERY_SCHEME = ("reverse", "reverse_causal")
LENGTH_SCHEMES = ("none", "rope", "alibi", "fox", "stick_breaking", "rand_rope")
# The LM's pairs train slowest (a BPE vocabulary, passkey and perplexity to 8L): a scheme of each kind, and those whose
# LM path differs (a position table past L, xPos' scale, CoPE's table, a local/global layout's windows). Its model is
# the causal SequenceTransformer of reverse_causal, where every scheme trains on both paths; the default study runs
# every LM scheme through every stage.
LM_SCHEMES = (*LENGTH_SCHEMES, "learned", "xpos", "cope", "command_a")
SUBSETS = {"length": lambda task, scheme: task in LENGTH_EVERY_SCHEME or scheme in LENGTH_SCHEMES,
           "lm": lambda task, scheme: scheme in LM_SCHEMES}
PAIRS = [(task, scheme) for task in task_names() for scheme in scheme_names()
         if SUBSETS.get(study_of(TASKS[task].__module__).name, lambda task, scheme: True)(task, scheme)]


def matrix_raw(task: str, scheme: str) -> dict:
    """The smoke composition with only ``task`` and ``scheme``, a few steps, no dropout (so the stacked and the
    one-by-one runs are the same runs to float tolerance)."""
    lists = {"tasks": [], "length_tasks": [], "lm_tasks": []}
    home = study_of(TASKS[task].__module__)  # the task and scheme in the lists of the task's own study
    lists[home.tasks_key] = [task]
    schemes = {"pe": {"schemes": [scheme]}} if home.schemes_key == "pe.schemes" else {home.schemes_key: [scheme]}
    raw = smoke_raw(seeds=SEEDS, **lists, **schemes)
    section = raw[get_task(task).params_section]
    section["train"] = {**section["train"], "steps": 4, "log_every": 2, "warmup_steps": 1,
                        "checkpoints": min(section["train"].get("checkpoints", 0), 2)}
    section["model"] = {**section["model"], "dropout": 0.0}
    return raw


def accepts(task: str, scheme: str) -> bool:
    try:
        parse_params(matrix_raw(task, scheme))
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory):
    """Each task's data, prepared once at the smoke sizes (``{task: path}``, filled on first use)."""
    root, prepared = tmp_path_factory.mktemp("matrix_data"), {}

    def get(task: str) -> Path:
        if task not in prepared:
            params = parse_params(matrix_raw(task, "none"))
            get_task(task).prepare(params.task(task), root / task)
            prepared[task] = root / task
        return prepared[task]

    return get


def test_every_task_accepts_the_null_scheme_and_every_scheme_some_task():
    accepted = {pair for pair in PAIRS if accepts(*pair)}
    assert {task for task, _ in accepted} == set(task_names())
    assert {scheme for _, scheme in accepted} == set(scheme_names())
    assert all((task, "none") in accepted for task in task_names())


@pytest.mark.parametrize("task,scheme", PAIRS, ids=[f"{t}-{s}" for t, s in PAIRS])
def test_pair_trains_on_every_path_reloads_and_evaluates_or_is_refused_in_one_line(task, scheme, data_dirs, tmp_path):
    raw = matrix_raw(task, scheme)
    try:
        params = parse_params(raw)
    except ValueError as refusal:
        message = str(refusal)
        assert "\n" not in message and scheme in message and task in message, message
        return
    data = data_dirs(task)
    paths = {"one_by_one": False, **({"stacked": True} if get_task(task).vectorises else {})}
    histories = {}
    for path, vectorise in paths.items():
        outs = [run_dir(tmp_path / path / "runs", task, scheme, seed) for seed in SEEDS]
        costs = train_runs(params, task, scheme, SEEDS, data, outs, device="cpu", stack=vectorise,
                           kept=tmp_path / path / "kept")
        assert [cost["seeds_together"] for cost in costs] == [len(SEEDS) if vectorise else 1] * len(SEEDS)
        histories[path] = [[row["loss"] for row in load_history(out)] for out in outs]
        assert all(math.isfinite(loss) for seed in histories[path] for loss in seed), histories[path]
        run = load_run(outs[1])  # the second seed: a stacking mistake shows there first
        assert (run.task, run.scheme, run.seed) == (task, scheme, SEEDS[1])
        saved = torch.load(outs[1] / "model.pt", weights_only=True)
        assert all(torch.equal(value, saved[name]) for name, value in run.model.state_dict().items())
        rows = evaluate_run(params, outs[1], data, tmp_path / path / "results", device="cpu")
        scored = [row for row in rows if row["metric"] != "eval_time_s"]
        assert scored and all(math.isfinite(row["value"]) for row in scored)
        assert all(0.0 <= row["value"] <= 1.0 for row in scored if row["metric"] in ("exact_match", "token_accuracy"))
    # the same runs, to float tolerance (kernels batched over seeds round differently, by about 1e-7 relative in
    # float32, which Adam grows by well under 100-fold in 4 steps: rel 1e-4 holds on any machine's kernels); except
    # where positions are drawn at random in training, which a stack draws from vmap's per-seed streams, as it draws
    # dropout masks
    randomized = any(isinstance(module, RandomizedPositions) for module in run.model.modules())
    if "stacked" in histories and not randomized:
        for stacked, alone in zip(histories["stacked"], histories["one_by_one"]):
            assert stacked == pytest.approx(alone, rel=1e-4, abs=1e-5)


def load_history(out: Path) -> list[dict]:
    from pelab import io

    return io.read_csv(out / "history.csv")


@pytest.mark.parametrize("task", ["copy", "reverse", "translation"])
def test_every_task_logs_a_validation_curve_held_out_from_training_and_test(task, data_dirs, tmp_path):
    """Every run's weights are chosen on its validation loss, so every task has a validation split: copy and the
    length tasks hold it out of their training sequences, translation has its own."""
    params = parse_params(matrix_raw(task, "none"))
    out = run_dir(tmp_path / "runs", task, "none", 0)
    train_runs(params, task, "none", [0], data_dirs(task), [out], device="cpu", stack=False)
    assert {"val_loss"} == set(load_history(out)[-1]) - {"step", "loss", "lr"}
    from pelab import io

    records = io.read_jsonl(out / "train_records.jsonl")
    assert [(r["split"], r["metric"]) for r in records if r["split"] == "val"] == [("val", "loss"), ("val", "loss_last")]

