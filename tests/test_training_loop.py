"""The one training loop (pelab.training.loop): seeds trained together (training.stacking) are the runs each seed
makes alone - same initial weights, data order and optimisation, to float tolerance; per-seed clipping; a killed
training resumes where it stopped; finished runs are kept (runner.kept_runs), so adding a seed trains only it."""

from __future__ import annotations

import copy
import shutil

import pytest
import torch
from conftest import smoke_params, smoke_raw

from pelab import io
from pelab.config import TrainConfig
from pelab.runner.kept_runs import fingerprint
from pelab.runner.train import train_runs
from pelab.tasks import get_task
from pelab.tasks.copy.task import copy_loss
from pelab.training.loop import train
from pelab.training.stacking import SeedStack, clip_per_seed, stack_batches


def _params(tmp_path, task: str, **train):
    raw = smoke_raw()
    raw[task] = {**raw[task], "train": {**raw[task]["train"], **train}}
    if task == "translation":
        raw[task]["model"] = {**raw[task]["model"], "dropout": 0.0}  # dropout streams differ by design
    params = smoke_params(tmp_path, **{task: raw[task]})
    get_task(task).prepare(params.task(task), tmp_path / "data")
    return params


def record_trainings(monkeypatch) -> list[int]:
    """Replace the runner's ``train`` with one that records how many seeds each call trains, then trains."""
    import pelab.runner.train as runner_train

    real_train, trained = runner_train.train, []

    def recording(models, *args, **kwargs):
        trained.append(len(models))
        return real_train(models, *args, **kwargs)

    monkeypatch.setattr(runner_train, "train", recording)
    return trained


def _losses(run_dir) -> list[float]:
    return [float(row["loss"]) for row in io.read_csv(run_dir / "history.csv")]


@pytest.mark.parametrize("task, scheme", [("copy", "rope"), ("copy", "t5"), ("translation", "alibi")])
def test_the_stage_trains_each_seed_in_the_stack_as_its_single_run(tmp_path, task, scheme):
    """Through the runner, in float64: identical to rounding over 60 steps."""
    _each_seed_of_the_stack_is_its_single_run(tmp_path, _params(tmp_path, task, steps=60, log_every=10), task, scheme)


def _each_seed_of_the_stack_is_its_single_run(tmp_path, params, task: str, scheme: str) -> None:
    """Seeds 0-2 trained one after another and stacked through the runner, every model in float64: the same losses
    and every weight.

    Why float64: the stack's kernels (batched matmuls under vmap) sum in another order than one model's, so the two
    differ by rounding, u = 6e-8 in float32, and Adam divides each step by the gradient's own scale, which grows a
    difference about 1e4-fold over 40 steps (measured: up to 1.2e-3 in FIRE's MLP weights on an AMD EPYC at one
    thread, 1.5e-3 on an Intel Xeon with AVX-512, against a 1e-3 tolerance). In float64 (u = 1.1e-16) the same growth
    leaves about 1e-12; measured at most 1.1e-9 with 40 steps. The 1e-6 below is three orders of magnitude above
    that, on any machine's kernels and thread count, and ten below the differences a wrong batch, seed or clip
    makes (two seeds differ by 10%). It holds for parameters whose true gradient is zero too (a key bias, FIRE's output
    bias: softmax ignores a constant per query): their gradient is rounding noise, about 1e-17 in float64, far below
    Adam's eps (1e-8), so they move by about lr·1e-9 a step; in float32 the noise is near eps and Adam steps on it."""
    seeds = [0, 1, 2]
    alone = [tmp_path / f"alone_{k}" for k in seeds]
    together = [tmp_path / f"together_{k}" for k in seeds]
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        train_runs(params, task, scheme, seeds, tmp_path / "data", alone, device="cpu", stack=False)
        costs = train_runs(params, task, scheme, seeds, tmp_path / "data", together, device="cpu", stack=True)
    finally:
        torch.set_default_dtype(default)
    assert [c["seeds_together"] for c in costs] == [3, 3, 3]
    for a, b in zip(alone, together):
        assert _losses(a) == pytest.approx(_losses(b), rel=1e-6, abs=1e-9)
        wa, wb = torch.load(a / "model.pt"), torch.load(b / "model.pt")
        assert wa.keys() == wb.keys() and {w.dtype for w in wa.values() if w.is_floating_point()} == {torch.float64}
        for name in wa:
            assert torch.allclose(wa[name], wb[name], rtol=1e-6, atol=1e-6), name
    assert _losses(alone[0]) != pytest.approx(_losses(alone[1]), rel=1e-3)  # the seeds really differ


@pytest.mark.parametrize("task, scheme", [("copy", "rope"), ("copy", "alibi"), ("translation", "t5")])
def test_in_float64_a_stacked_seed_follows_its_single_run_for_hundreds_of_steps(tmp_path, task, scheme):
    """fp64 models (the losses still round logits to fp32, as in every run): the stack's kernels (batched
    matmuls, explicit attention) round differently from one model's, and Adam grows such differences, but over
    300 steps they stay below 1e-3 relative (3.4e-4 measured for copy/rope), while two seeds differ by 10%."""
    params = _params(tmp_path, task, steps=300 if task == "copy" else 150, log_every=10)
    spec, cfg = get_task(task), params.task(task)
    data = spec.load_data(tmp_path / "data")
    info = spec.data_info(data)
    seeds = [0, 1, 2]
    models = [spec.build_model(cfg.model, scheme, cfg.options(scheme), k, info).double() for k in seeds]
    alone = [train([copy.deepcopy(m)], [spec.batches(cfg, data, k)], spec.loss(cfg), cfg.train,
                   torch.device("cpu"))[0] for m, k in zip(models, seeds)]
    stacked = copy.deepcopy(models)
    together = train(stacked, [spec.batches(cfg, data, k) for k in seeds], spec.loss(cfg), cfg.train,
                     torch.device("cpu"), pad_values=spec.batch_padding)
    for a, b in zip(alone, together):
        assert [r["loss"] for r in b.history] == pytest.approx([r["loss"] for r in a.history], rel=1e-3)


def test_one_seed_trains_the_model_itself_without_vmap():
    model = torch.nn.Linear(3, 2)
    one, two = SeedStack([model], loss_fn=None), SeedStack([model, torch.nn.Linear(3, 2)], loss_fn=None)
    assert not one.stacked and all(one.params[n] is p for n, p in model.named_parameters())
    assert two.stacked and two.params["weight"].shape == (2, 2, 3)


def test_translation_batches_of_different_lengths_are_padded_to_one_shape():
    a = (torch.tensor([[5, 6, 2]]), torch.tensor([[1, 7]]))
    b = (torch.tensor([[5, 2]]), torch.tensor([[1, 7, 8, 9]]))
    src, tgt = stack_batches([a, b], pad_values=(0, 0))
    assert src.tolist() == [[[5, 6, 2]], [[5, 2, 0]]] and tgt.tolist() == [[[1, 7, 0, 0]], [[1, 7, 8, 9]]]
    with pytest.raises(ValueError, match="differs in shape across seeds"):
        stack_batches([a, b])


def test_each_seed_is_clipped_by_its_own_global_norm():
    torch.manual_seed(0)
    models = [torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)) for _ in range(3)]
    grads = [[torch.randn_like(p) * scale for p in m.parameters()] for m, scale in zip(models, (0.01, 1.0, 10.0))]
    stacked = [torch.stack(per_param).requires_grad_() for per_param in zip(*grads)]
    for p, per_param in zip(stacked, zip(*grads)):
        p.grad = torch.stack(per_param).clone()
    norms = clip_per_seed(stacked, max_norm=1.0)
    for s, model in enumerate(models):
        for p, g in zip(model.parameters(), grads[s]):
            p.grad = g.clone()
        expected = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        assert float(norms[s]) == pytest.approx(float(expected), rel=1e-5)
        for p, clipped in zip(model.parameters(), stacked):
            assert torch.allclose(p.grad, clipped.grad[s], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n_seeds", [1, 2])
def test_a_killed_training_resumes_where_it_stopped_and_ends_as_if_never_killed(tmp_path, n_seeds):
    params = _params(tmp_path, "copy", steps=40, log_every=5)
    task, cfg = get_task("copy"), params.task("copy")
    data = task.load_data(tmp_path / "data")
    info = task.data_info(data)
    build = [task.build_model(cfg.model, "rope", cfg.options("rope"), k, info) for k in range(n_seeds)]

    def fit(models, state_file=None, kill_at=None):
        def row_seen(row):
            if kill_at is not None and row["step"] == kill_at:
                raise KeyboardInterrupt  # the kill, right after the state of step kill_at was saved
        return train(models, [task.batches(cfg, data, k) for k in range(len(models))], copy_loss, cfg.train,
                     torch.device("cpu"), on_rows=[row_seen, *[lambda row: None] * (len(models) - 1)],
                     state_file=state_file, state_key={"run": "test"}, save_every_s=0.0)

    torch.manual_seed(0)
    whole = fit(copy.deepcopy(build))
    state = tmp_path / "resume" / "copy" / "rope.pt"
    torch.manual_seed(0)
    with pytest.raises(KeyboardInterrupt):
        fit(copy.deepcopy(build), state_file=state, kill_at=25)
    assert torch.load(state, weights_only=False)["step"] == 20  # saved after the row of step 20, not 25's
    torch.manual_seed(123)  # the RNG state comes from the saved state, not from here
    models = copy.deepcopy(build)
    resumed = fit(models, state_file=state)
    for a, b in zip(whole, resumed):
        assert [r["step"] for r in b.history] == [r["step"] for r in a.history]
        assert [r["loss"] for r in b.history] == pytest.approx([r["loss"] for r in a.history], rel=1e-5)


def test_a_training_state_loads_its_own_state_dict_into_a_fresh_one(tmp_path):
    """``TrainingState``: what a saved state holds, loaded into a fresh state of fresh models, is the same state
    (weights, AdamW moments, schedule, step, curves, tokens, best weights, RNG)."""
    from pelab.training.graphs import TrainStep
    from pelab.training.loop import adamw, lr_schedule
    from pelab.training.stacking import SeedStack
    from pelab.training.state import BestWeights, TrainingState

    params = _params(tmp_path, "copy", steps=6, log_every=3)
    task, cfg = get_task("copy"), params.task("copy")
    data = task.load_data(tmp_path / "data")
    info = task.data_info(data)

    def fresh(seed_offset: int) -> TrainingState:
        models = [task.build_model(cfg.model, "rope", cfg.options("rope"), k + seed_offset, info) for k in range(2)]
        seeds = SeedStack(models, copy_loss, None)
        optimizer = adamw(list(seeds.params.values()), [], cfg.train)
        return TrainingState(seeds, optimizer, lr_schedule(optimizer, cfg.train), BestWeights(2, "val_loss"),
                             torch.device("cpu"), False)

    trained = fresh(0)
    batch = trained.seeds.stack([task.batches(cfg, data, k)(0) for k in range(2)])
    TrainStep(trained.seeds, trained.optimizer, cfg.train.grad_clip, torch.device("cpu"))(batch)
    trained.schedule.step()
    trained.step = 1
    trained.tokens += 7
    trained.log(1, [0.5, 0.25], lambda step, m: {"val_loss": 1.0}, None)
    saved = trained.state_dict()
    other = fresh(10)
    other.load_state_dict(saved)
    again = other.state_dict()
    assert again["step"] == 1 and again["results"] == saved["results"] and torch.equal(again["tokens"], saved["tokens"])
    assert all(torch.equal(again["params"][n], t) for n, t in saved["params"].items())
    assert again["schedule"] == saved["schedule"] and torch.equal(again["rng"], saved["rng"])
    moments = [v for state in saved["optimizer"]["state"].values() for v in state.values()]
    assert moments and all(torch.equal(a, b) for a, b in zip(
        [v for state in again["optimizer"]["state"].values() for v in state.values()], moments))
    assert [step for step, _, _ in again["best"]] == [1, 1] and again["wall_time_s"] >= saved["wall_time_s"]


def test_a_resume_file_of_another_training_is_ignored(tmp_path, capsys):
    params = _params(tmp_path, "copy", steps=10, log_every=5)
    task, cfg = get_task("copy"), params.task("copy")
    data = task.load_data(tmp_path / "data")
    info = task.data_info(data)
    models = [task.build_model(cfg.model, "none", cfg.options("none"), k, info) for k in (0, 1)]
    state = tmp_path / "state.pt"
    torch.save({"key": {"run": "another"}, "step": 5}, state)
    results = train(models, [task.batches(cfg, data, k) for k in (0, 1)], copy_loss, cfg.train,
                    torch.device("cpu"), state_file=state, state_key={"run": "this"})
    assert "holds another training state" in capsys.readouterr().out
    assert [r["step"] for r in results[0].history] == [5, 10]


def _length_params(tmp_path, task: str, **train):
    raw = smoke_raw(length_tasks=[task])
    raw["length"] = {**raw["length"], "train": {**raw["length"]["train"], **train}}
    params = smoke_params(tmp_path, **raw)
    get_task(task).prepare(params.task(task), tmp_path / "data")
    return params


@pytest.mark.parametrize("task, scheme", [("reverse", "rope"), ("reverse_causal", "sinusoidal"),
                                          ("reverse", "fire")])
def test_the_length_study_s_seeds_stack_and_each_is_its_single_run(tmp_path, task, scheme):
    """One length schedule shared by the seeds (issue 28): the stack trains what each seed trains alone (its own
    sequences and initial weights), to float tolerance, as the main study's test above."""
    _each_seed_of_the_stack_is_its_single_run(tmp_path, _length_params(tmp_path, task, steps=40, log_every=10),
                                              task, scheme)


def test_on_the_cpu_the_length_seeds_stack_except_where_training_draws_positions(tmp_path):
    """Auto policy: a deterministic scheme's seeds stack; a randomized scheme's draws depend on its stack, so on the
    CPU its seeds train one after another and adding a seed still trains only that seed."""
    params = _length_params(tmp_path, "reverse")
    for scheme, together in (("rope", 2), ("rand_rope", 1)):
        outs = [tmp_path / scheme / f"seed_{k}" for k in (0, 1)]
        costs = train_runs(params, "reverse", scheme, [0, 1], tmp_path / "data", outs, device="cpu")
        assert [c["seeds_together"] for c in costs] == [together, together], scheme


def test_a_task_whose_batches_cannot_stack_trains_its_seeds_one_after_another(tmp_path, monkeypatch):
    params = _length_params(tmp_path, "reverse")
    monkeypatch.setattr(type(get_task("reverse")), "vectorises", False)
    costs = train_runs(params, "reverse", "none", [0, 1], tmp_path / "data",
                       [tmp_path / "seed_0", tmp_path / "seed_1"], device="cpu", stack=True)
    assert all(c["seeds_together"] == 1 for c in costs)
    assert (tmp_path / "seed_1" / "model.pt").exists()


def test_a_diverging_seed_is_named_when_seeds_train_together(tmp_path):
    params = _params(tmp_path, "copy", lr=1e9)
    with pytest.raises(ValueError, match=r"training diverged: loss (nan|inf) at step \d+ \(task copy, scheme rope, "
                                         r"seed [01], lr [0-9.e+]+\); lower the learning rate"):
        train_runs(params, "copy", "rope", [0, 1], tmp_path / "data", [tmp_path / "a", tmp_path / "b"], device="cpu")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_training_config_is_shared_unchanged():
    assert TrainConfig().grad_clip == 1.0  # the clip every task uses, per seed when stacked


def test_on_the_cpu_seeds_stack_only_where_it_pays_and_a_killed_sequential_stage_keeps_finished_seeds(
        tmp_path, monkeypatch):
    """Auto policy: on the CPU the copy task stacks (no padding), translation trains one seed after another
    (padding its seeds' batches costs more than stacking saves). A kill after seed 0 of a sequential stage
    keeps seed 0: the next attempt restores it instead of training it again."""
    import pelab.runner.train as runner_train

    params = _params(tmp_path, "translation", steps=10, log_every=5)
    outs = [tmp_path / "runs" / f"seed_{k}" for k in (0, 1)]
    kept = tmp_path / ".kept" / "translation" / "rope"
    real_train, calls = runner_train.train, []

    def dies_on_seed_1(models, *args, **kwargs):
        calls.append(kwargs["desc"])
        if kwargs["desc"].endswith("seed 1") and len(calls) == 2:
            raise KeyboardInterrupt  # the kill
        return real_train(models, *args, **kwargs)

    monkeypatch.setattr(runner_train, "train", dies_on_seed_1)
    with pytest.raises(KeyboardInterrupt):
        train_runs(params, "translation", "rope", [0, 1], tmp_path / "data", outs, device="cpu", kept=kept)
    assert (kept / "seed_0" / "model.pt").exists()
    for out in outs:  # DVC deletes a stage's outputs before it runs the stage again
        if out.exists():
            shutil.rmtree(out)
    costs = train_runs(params, "translation", "rope", [0, 1], tmp_path / "data", outs, device="cpu", kept=kept)
    assert calls == ["translation rope seed 0", "translation rope seed 1", "translation rope seed 1"]
    assert all(c["seeds_together"] == 1 for c in costs) and (outs[0] / "model.pt").exists()
    assert not (kept / "state.pt").exists()  # the state of a training is gone once its runs are written

    (tmp_path / "copy").mkdir()
    copy_params = _params(tmp_path / "copy", "copy", steps=10, log_every=5)
    costs = train_runs(copy_params, "copy", "rope", [0, 1], tmp_path / "copy" / "data",
                       [tmp_path / "c0", tmp_path / "c1"], device="cpu")
    assert all(c["seeds_together"] == 2 for c in costs)


def test_adding_a_seed_trains_only_that_seed_and_a_changed_input_retrains_every_seed(tmp_path, monkeypatch):
    """The kept runs of a stacked stage: with seeds [0, 1] trained, [0, 1, 2] trains seed 2 alone and restores
    0 and 1 unchanged (the same files); a changed learning rate makes every kept run stale."""

    params = _params(tmp_path, "copy", steps=10, log_every=5)
    kept = tmp_path / ".kept" / "copy" / "rope"
    outs = [tmp_path / "runs" / f"seed_{k}" for k in (0, 1, 2)]
    trained = record_trainings(monkeypatch)
    train_runs(params, "copy", "rope", [0, 1], tmp_path / "data", outs[:2], device="cpu", kept=kept)
    before = [(out / "model.pt").read_bytes() for out in outs[:2]]
    shutil.rmtree(tmp_path / "runs")  # as DVC does before it reruns the stage
    costs = train_runs(params, "copy", "rope", [0, 1, 2], tmp_path / "data", outs, device="cpu", kept=kept)
    assert trained == [2, 1]  # seeds 0 and 1 together, then seed 2 alone
    assert [(out / "model.pt").read_bytes() for out in outs[:2]] == before
    assert [c["seeds_together"] for c in costs] == [2, 2, 1]

    (tmp_path / "lr").mkdir()
    faster = _params(tmp_path / "lr", "copy", steps=10, log_every=5, lr=0.002)
    shutil.rmtree(tmp_path / "runs")
    train_runs(faster, "copy", "rope", [0, 1, 2], tmp_path / "data", outs, device="cpu", kept=kept)
    assert trained == [2, 1, 3]


def test_a_kept_run_is_restored_only_from_the_same_precision_and_where_training_draws_from_the_same_stack(
        tmp_path, monkeypatch):
    """A run trained on another device type or precision is retrained. With dropout on, a seed's masks depend on
    the stack it trains in: one by one, adding seed 2 trains only seed 2; stacked, [0, 1, 2] retrains all three
    (restoring 0 and 1 from the stack [0, 1] would not be the run that the stage trains now)."""
    import pelab.runner.train as runner_train

    raw = smoke_raw()
    raw["translation"] = {**raw["translation"], "train": {**raw["translation"]["train"], "steps": 4, "log_every": 2},
                          "model": {**raw["translation"]["model"], "dropout": 0.1}}
    params = smoke_params(tmp_path, translation=raw["translation"])
    get_task("translation").prepare(params.task("translation"), tmp_path / "data")
    trained = record_trainings(monkeypatch)
    for stack, expected in ((False, [1, 1, 1]), (True, [2, 3])):
        kept, runs = tmp_path / f".kept_{stack}", tmp_path / f"runs_{stack}"
        outs = [runs / f"seed_{k}" for k in (0, 1, 2)]
        trained.clear()
        train_runs(params, "translation", "rope", [0, 1], tmp_path / "data", outs[:2], device="cpu", stack=stack,
                   kept=kept)
        shutil.rmtree(runs)
        train_runs(params, "translation", "rope", [0, 1, 2], tmp_path / "data", outs, device="cpu", stack=stack,
                   kept=kept)
        assert trained == expected, stack
        assert io.read_json(outs[0] / "run.json")["stack"] == ([0, 1, 2] if stack else [0])

    trained.clear()
    shutil.rmtree(tmp_path / "runs_False")
    monkeypatch.setattr(runner_train, "precision", lambda device: "cuda-bf16")  # as if now on a GPU
    train_runs(params, "translation", "rope", [0, 1, 2], tmp_path / "data", outs, device="cpu", stack=False,
               kept=tmp_path / ".kept_False")
    assert trained == [1, 1, 1]


def test_mixed_precision_is_bf16_or_none_never_fp16(monkeypatch):
    """fp16 needs a gradient scaler, and one scaler over a stack of seeds skips every seed's step when one seed
    overflows: a GPU without native bf16 trains in fp32."""
    from pelab import device as dev

    cuda = torch.device("cuda")
    for native, expected in ((True, torch.bfloat16), (False, None)):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True, n=native: n)
        assert dev.amp_dtype(cuda) == expected
        assert dev.precision(cuda) == ("cuda-bf16" if native else "cuda-fp32")
    assert dev.amp_dtype(torch.device("cpu")) is None and dev.precision(torch.device("cpu")) == "cpu-fp32"


def test_the_fingerprint_of_kept_runs_follows_the_data_and_the_scheme(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.pt").write_bytes(b"a")
    first = fingerprint(tmp_path / "data", "copy", "rope")
    assert fingerprint(tmp_path / "data", "copy", "rope") == first
    assert fingerprint(tmp_path / "data", "copy", "alibi") != first  # another scheme's module
    (tmp_path / "data" / "train.pt").write_bytes(b"b")
    assert fingerprint(tmp_path / "data", "copy", "rope") != first


def test_the_stage_saves_the_training_state_as_often_as_asked(tmp_path, monkeypatch):
    """``train_runs(save_every_s=...)`` (the stage's ``--save-every``) reaches the loop: with 0 s the state is
    saved at every logged row, so a kill after the first row already finds it on disk."""
    import pelab.runner.train as runner

    params = _params(tmp_path, "copy", steps=20, log_every=5)
    kept = tmp_path / ".kept" / "copy" / "rope"
    seen: list[bool] = []
    real_train = runner.train

    class Killed(Exception):
        pass

    def kill_at_second_row(*args, **kwargs):
        def first_seed_row(row):  # rows are logged, then the state is saved
            seen.append((kept / "state.pt").exists())
            if len(seen) == 2:
                raise Killed

        kwargs["on_rows"] = [first_seed_row, *kwargs["on_rows"][1:]]
        return real_train(*args, **kwargs)

    monkeypatch.setattr(runner, "train", kill_at_second_row)
    with pytest.raises(Killed):
        train_runs(params, "copy", "rope", [0, 1], tmp_path / "data", [tmp_path / "a", tmp_path / "b"], device="cpu",
                   stack=True, kept=kept, save_every_s=0.0)
    assert seen == [False, True]  # nothing saved before the first row; saved after it


# ---------------------------------------------------------------------------------------- CUDA-graph step
# What the graphed step (training.graphs) needs that the CPU can check; the capture itself runs on a GPU only
# (benchmarks/bench_graphs.py: on an H200 the graphed losses equal the eager ones to the bit).


def test_the_capturable_adamw_with_an_in_place_schedule_trains_as_the_plain_one():
    """The lr a device tensor that the schedule fills in place: the same weights as AdamW with a float lr, and the
    logged lr read without touching the tensor."""
    from pelab.training.loop import adamw, current_lr, lr_schedule

    cfg = TrainConfig(steps=12, batch_size=1, lr=3e-3, warmup_steps=4, weight_decay=0.1)
    torch.manual_seed(0)
    start = [torch.randn(4, 3), torch.randn(3)]
    grads = [[torch.randn_like(p) for p in start] for _ in range(cfg.steps)]
    finals, lrs = [], []
    for capturable in (None, torch.device("cpu")):
        params = [torch.nn.Parameter(p.clone()) for p in start]
        optimizer = adamw(params[:1], params[1:], cfg, capturable_on=capturable)
        schedule = lr_schedule(optimizer, cfg)
        seen = []
        for step_grads in grads:
            seen.append(current_lr(schedule))
            for p, g in zip(params, step_grads):
                p.grad = g.clone()
            optimizer.step()
            schedule.step()
        finals.append([p.detach() for p in params])
        lrs.append(seen)
        if capturable is not None:
            assert isinstance(optimizer.param_groups[0]["lr"], torch.Tensor)
    assert lrs[0] == lrs[1] and lrs[0][0] == pytest.approx(3e-3 / 4) and lrs[0][4] == pytest.approx(3e-3)
    for a, b in zip(*finals):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_only_schemes_that_draw_positions_on_the_host_are_kept_out_of_cuda_graphs():
    from pelab.model.config import ModelConfig
    from pelab.model.sequence import build_sequence_model
    from pelab.positional import SCHEMES, scheme_options
    from pelab.training.graphs import TrainStep, graph_safe

    unsafe = set()
    for scheme in SCHEMES:
        options = scheme_options(scheme, {"max_position": 64} if scheme.startswith("rand_") else None)
        model = build_sequence_model(scheme, 12, ModelConfig(d_model=8, n_layers=1, n_heads=2, d_ff=16), options, 0,
                                     causal=True)
        if not graph_safe([model]):
            unsafe.add(scheme)
    assert unsafe == {"rand_sinusoidal", "rand_learned", "rand_rope"}
    with pytest.raises(ValueError, match="CUDA graphs need a CUDA device"):
        TrainStep(None, None, 1.0, torch.device("cpu"), graphs=True)


def test_translation_alone_trains_eagerly_on_cuda():
    from pelab.tasks import TASKS

    assert {name for name, task in TASKS.items() if not task.graph_steps} == {"translation"}


def test_on_cuda_the_lm_s_graphed_schemes_train_one_seed_at_a_time_and_everything_else_stacks():
    from pelab.runner.train import stacks_by_default
    from pelab.tasks import get_task

    def stacks(task: str, scheme: str, device: str) -> bool:  # no dropout in these tasks: draws = randomized
        return stacks_by_default(get_task(task), scheme, device, draws=scheme.startswith("rand_"))

    assert not stacks("lm", "rope", "cuda") and not stacks("lm", "alibi", "cuda")
    assert stacks("lm", "rand_rope", "cuda")  # trained eagerly: there the stack pays
    assert all(stacks(task, "rope", "cuda") for task in ("copy", "translation", "reverse", "reverse_causal"))
    assert stacks("copy", "rope", "cpu")
    assert not stacks("lm", "rope", "cpu") and not stacks("translation", "rope", "cpu")


def test_a_saved_state_resumes_in_the_optimizer_s_own_mode_eager_or_capturable():
    """A state an eager run saved resumes a graphed run (and back): loading keeps the optimizer's capturable flag
    and the type of its lr (a device tensor when graphed), which ``load_state_dict`` alone would overwrite."""
    from pelab.training.loop import adamw, load_optimizer_state

    cfg = TrainConfig(steps=4, batch_size=1, lr=1e-3)
    params = [torch.nn.Parameter(torch.randn(3, 2))]
    eager = adamw(params, [], cfg)
    params[0].grad = torch.ones(3, 2)
    eager.step()
    cpu = torch.device("cpu")  # capturable AdamW runs on the CPU too, uncaptured
    graphed = adamw([torch.nn.Parameter(torch.randn(3, 2))], [], cfg, capturable_on=cpu)
    load_optimizer_state(graphed, eager.state_dict(), cpu)
    assert all(g["capturable"] and isinstance(g["lr"], torch.Tensor) for g in graphed.param_groups)
    back = adamw([torch.nn.Parameter(torch.randn(3, 2))], [], cfg)
    load_optimizer_state(back, graphed.state_dict(), None)
    assert all(not g.get("capturable", False) and g["lr"] == pytest.approx(1e-3) and isinstance(g["lr"], float)
               for g in back.param_groups)


def test_preparing_a_cuda_device_makes_an_indexed_one_current_and_leaves_plain_cuda_alone(monkeypatch):
    from pelab import device as device_module

    chosen = []
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    device_module.prepare_device(torch.device("cuda"))
    device_module.prepare_device(torch.device("cuda:1"))
    device_module.prepare_device(torch.device("cpu"))
    assert chosen == [1]


# ------------------------------------------------------------------------------------- the scored step
SCRIPTED_VAL = {0: {5: 3.0, 10: 2.0, 15: 2.5, 20: 2.9}, 1: {5: 3.0, 10: 2.6, 15: 2.2, 20: 2.4}}  # seed -> step -> loss


@pytest.mark.parametrize("stack", [False, True])
def test_each_seed_is_scored_at_its_step_of_lowest_validation_loss(tmp_path, monkeypatch, stack):
    """Validation loss rises after step k (10 for seed 0, 15 for seed 1): the weights written, which evaluation
    scores, are step k's, each stacked seed its own; the record has the best step and both validation losses."""
    params = _params(tmp_path, "copy", steps=20, log_every=5)
    task = get_task("copy")
    seen: dict[tuple[int, int], dict[str, torch.Tensor]] = {}  # (seed, step) -> weights

    def scripted_validation(self, cfg, data, device):
        calls = []

        def validate(model):
            seed = len(calls) % 2 if stack else len(calls) // 4  # stacked: both seeds per step; else one after other
            step = 5 * (len(calls) // 2 + 1) if stack else 5 * (len(calls) % 4 + 1)
            calls.append(step)
            seen[seed, step] = {k: v.clone() for k, v in model.state_dict().items()}
            return {"val_loss": SCRIPTED_VAL[seed][step]}
        return validate

    monkeypatch.setattr(type(task), "validation", scripted_validation)
    outs = [tmp_path / "runs" / f"seed_{k}" for k in (0, 1)]
    train_runs(params, "copy", "rope", [0, 1], tmp_path / "data", outs, device="cpu", stack=stack)
    for seed, best_step, last in ((0, 10, 2.9), (1, 15, 2.4)):
        weights = torch.load(outs[seed] / "model.pt", weights_only=True)
        for name, value in seen[seed, best_step].items():
            torch.testing.assert_close(weights[name], value, rtol=0, atol=0)
        assert any((weights[n] != seen[seed, 20][n]).any() for n in weights)  # not the last step's
        rows = {(r["split"], r["metric"]): r["value"] for r in io.read_jsonl(outs[seed] / "train_records.jsonl")}
        assert rows["train", "best_step"] == best_step and rows["train", "steps"] == 20
        assert rows["val", "loss"] == SCRIPTED_VAL[seed][best_step] and rows["val", "loss_last"] == last
        cost = io.read_json(outs[seed] / "run.json")["cost"]
        assert (cost["best_step"], cost["best_val_loss"], cost["final_val_loss"]) == (best_step, rows["val", "loss"],
                                                                                      last)


def test_a_resumed_training_keeps_the_best_weights_found_before_the_kill(tmp_path):
    params = _params(tmp_path, "copy", steps=20, log_every=5)
    task, cfg = get_task("copy"), params.task("copy")
    data = task.load_data(tmp_path / "data")
    build = [task.build_model(cfg.model, "rope", cfg.options("rope"), 0, task.data_info(data))]
    curve = {5: 3.0, 10: 2.0, 15: 2.5, 20: 2.9}

    def fit(models, state_file=None, kill_at=None):
        def row_seen(row):
            if kill_at is not None and row["step"] == kill_at:
                raise KeyboardInterrupt
        return train(models, [task.batches(cfg, data, 0)], copy_loss, cfg.train, torch.device("cpu"),
                     on_log=lambda step, m: {"val_loss": curve[step]}, on_rows=[row_seen],
                     state_file=state_file, state_key={"run": "test"}, save_every_s=0.0)

    torch.manual_seed(0)
    whole_models = copy.deepcopy(build)
    whole = fit(whole_models)
    state = tmp_path / "state.pt"
    with pytest.raises(KeyboardInterrupt):
        fit(copy.deepcopy(build), state_file=state, kill_at=20)  # killed after step 15's save: best (10) is saved
    assert torch.load(state, weights_only=False)["best"][0][:2] == (10, 2.0)
    models = copy.deepcopy(build)
    resumed = fit(models, state_file=state)
    assert (resumed[0].best_step, resumed[0].best_val_loss, resumed[0].final_val_loss) == (10, 2.0, 2.9)
    assert (whole[0].best_step, whole[0].best_val_loss) == (10, 2.0)
    for (name, a), b in zip(whole_models[0].state_dict().items(), models[0].state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)


def test_without_a_validation_loss_the_last_step_is_kept():
    model = torch.nn.Linear(2, 1)
    batches = [lambda step: (torch.ones(4, 2), torch.zeros(4, 1))]

    def loss(m, batch):
        return ((m(batch[0]) - batch[1]) ** 2).mean(), 4

    cfg = TrainConfig(steps=6, batch_size=4, lr=0.1, warmup_steps=1, log_every=3)
    result = train([model], batches, loss, cfg, torch.device("cpu"))[0]
    assert (result.best_step, result.best_val_loss, result.final_val_loss) == (6, None, None)


def test_after_an_evaluation_only_edit_adding_a_seed_trains_only_that_seed(tmp_path, monkeypatch):
    """The kept runs' fingerprint reads the training code's import closure (here in a copy of pelab): an edit to
    evaluation code or to another scheme's module leaves the kept seeds valid, an edit to training code makes them
    stale."""
    import pelab.closure as closure

    package = tmp_path / "pelab"
    shutil.copytree(closure.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(closure, "PACKAGE", package)
    monkeypatch.setattr(closure, "SRC", tmp_path)
    params = _params(tmp_path, "copy", steps=10, log_every=5)
    kept = tmp_path / ".kept" / "copy" / "rope"
    outs = [tmp_path / "runs" / f"seed_{k}" for k in (0, 1, 2)]
    trained = record_trainings(monkeypatch)
    train_runs(params, "copy", "rope", [0, 1], tmp_path / "data", outs[:2], device="cpu", kept=kept)
    for edited in ("tasks/copy/evaluate.py", "runner/evaluate.py", "report/lm.py", "positional/alibi.py"):
        (package / edited).write_text((package / edited).read_text() + "\n# an evaluation-only edit\n")
    shutil.rmtree(tmp_path / "runs")
    train_runs(params, "copy", "rope", [0, 1, 2], tmp_path / "data", outs, device="cpu", kept=kept)
    assert trained == [2, 1]  # only seed 2
    (package / "training/loop.py").write_text((package / "training/loop.py").read_text() + "\nEDITED = True\n")
    shutil.rmtree(tmp_path / "runs")
    train_runs(params, "copy", "rope", [0, 1, 2], tmp_path / "data", outs, device="cpu", kept=kept)
    assert trained == [2, 1, 3]


def test_editing_a_study_record_or_a_validation_message_retrains_no_kept_run(tmp_path, monkeypatch):
    """A kept run's fingerprint reads what the run is trained from, not the params' validation or the study records
    (``runner/train.py`` imports ``Params`` for type checking only): editing a record's description or a validation
    message, a task's scoring methods or a docstring leaves the fingerprint of every (task, scheme) as it was; a
    training edit changes every one."""
    import pelab.closure as closure
    from pelab.positional import scheme_names
    from pelab.tasks import task_names

    package = tmp_path / "pelab"
    shutil.copytree(closure.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(closure, "PACKAGE", package)
    monkeypatch.setattr(closure, "SRC", tmp_path)
    (tmp_path / "data").mkdir()
    pairs = [(task, scheme) for task in task_names() for scheme in scheme_names()]

    def fingerprints() -> list[str]:
        return [fingerprint(tmp_path / "data", task, scheme) for task, scheme in pairs]

    def edit(path: str, old: str, new: str) -> None:
        text = (package / path).read_text()
        assert old in text, old
        (package / path).write_text(text.replace(old, new))

    before = fingerprints()
    edit("studies.py", 'about="the language-model study', 'about="the LM study, described anew')
    edit("params.py", "seeds must be distinct", "every seed must be distinct")
    assert fingerprints() == before
    edit("tasks/scoring.py", "has no recalibration", "has no fine-tune")  # scoring: reached by name, never trained
    edit("tasks/base.py", "The ``Task`` interface", "The task interface")  # the module's docstring
    assert fingerprints() == before
    (package / "training/loop.py").write_text((package / "training/loop.py").read_text() + "\nEDITED = True\n")
    assert all(a != b for a, b in zip(before, fingerprints()))
