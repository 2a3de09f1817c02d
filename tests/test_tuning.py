"""Per-scheme learning rates (pelab.runner.tune): params, the tuning split of each task, the choice of rate on
validation only, the kept runs a sweep shares, and the ranking both ways (pelab.tuned_ranking)."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch
from conftest import smoke_params, smoke_raw

import pelab.runner.train as runner_train
from pelab import io
from pelab.compose import compose_params
from pelab.io import run_dir
from pelab.params import parse_params
from pelab.runner.tune import best_val_loss, choose, kept_folder, sweep, tune_runs
from pelab.tasks import get_task
from pelab.tasks.copy.data import CopyData
from pelab.tuned_ranking import ranks, tuning_table


# ------------------------------------------------------------------------------------------------ params
def test_the_full_profile_tunes_every_task_and_follows_a_changed_task_list(repo_root):
    full = compose_params(repo_root / "conf", [])
    assert full["tune"] == {"scales": [0.5, 1.0, 2.0], "seed": 0, "tasks": full["tasks"],
                            "length_tasks": full["length_tasks"], "lm_tasks": full["lm_tasks"]}
    fewer = compose_params(repo_root / "conf", ["tasks=[copy]", "length_tasks=[reverse]"])
    assert (fewer["tune"]["tasks"], fewer["tune"]["length_tasks"]) == (["copy"], ["reverse"])
    for profile in ("quick", "medium", "smoke", "full_shape"):
        tune = compose_params(repo_root / "conf", [f"profile={profile}"])["tune"]
        assert (tune["tasks"], tune["length_tasks"], tune["lm_tasks"]) == ([], [], []), profile
    params = parse_params(full, check_cuda=False)
    assert params.tune.tasks == (*full["tasks"], *full["length_tasks"], *full["lm_tasks"])


@pytest.mark.parametrize("tune, message", [
    ({"scales": [0.5, 2.0]}, "tune.scales must be distinct and include 1.0"),
    ({"scales": [1.0, 1.0]}, "tune.scales must be distinct and include 1.0"),
    ({"scales": [1.0, -2.0]}, "tune.scales must be numbers > 0"),
    ({"seed": -1}, "tune.seed must be an integer >= 0, got -1"),
    ({"rates": [1]}, "unknown key(s) ['rates'] in tune; valid keys: scales, seed, tasks, length_tasks, lm_tasks"),
    ({"tasks": ["reverse"]}, "tune.tasks lists 'reverse', which is not in tasks; valid choices: copy, translation"),
    ({"length_tasks": ["copy"]}, "tune.length_tasks lists 'copy', which is not in length_tasks; valid choices: "
                                 "(none: length_tasks is empty)"),
])
def test_bad_tune_params_fail_with_one_line_naming_the_key(tune, message):
    raw = smoke_raw()
    raw["tune"] = {**raw["tune"], **tune}
    with pytest.raises(ValueError) as err:
        parse_params(raw, check_cuda=False)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_scale_changes_one_task_s_rate_only(tmp_path):
    params = smoke_params(tmp_path)
    doubled = params.at_lr_scale("copy", 2.0)
    assert doubled.task("copy").train.lr == 2 * params.task("copy").train.lr
    assert doubled.task("translation") == params.task("translation")
    assert params.at_lr_scale("copy", 1.0) is params


# ------------------------------------------------------------------------------------------ tuning data
def _rows(tensor: torch.Tensor) -> list[tuple[int, ...]]:
    return sorted(map(tuple, tensor.tolist()))


def test_copy_holds_its_validation_split_out_of_the_training_sequences(tmp_path):
    from pelab.tasks.copy import data as copy_data

    params = smoke_params(tmp_path)
    task, cfg = get_task("copy"), params.task("copy")
    task.prepare(cfg, tmp_path / "data")
    prepared, data = copy_data.load(tmp_path / "data"), task.load_data(tmp_path / "data")
    assert set(data.splits) == {"train", "val", "test", "test_long"} and task.tuning_data(cfg, data) is data
    train, val = data["train"], data["val"]
    assert _rows(torch.cat([train.inputs, val.inputs])) == _rows(prepared["train"].inputs)  # a partition of train
    assert len(val) == sum(int(n * 0.05) for n in prepared["train"].lengths.unique(return_counts=True)[1].tolist())
    assert not set(map(tuple, val.inputs.tolist())) & set(map(tuple, data["test"].inputs.tolist()))
    validate = task.validation(cfg, data, torch.device("cpu"))
    model = task.build_model(cfg.model, "rope", cfg.options("rope"), 0, task.data_info(data))
    assert set(validate(model)) == {"val_loss"}


@pytest.mark.parametrize("name", ["reverse", "addition_causal"])
def test_a_length_task_holds_its_validation_split_out_of_the_training_sequences(tmp_path, name):
    from pelab.tasks.length import data as length_data

    params = smoke_params(tmp_path, length_tasks=[name], length_schemes=["rope"])
    task, cfg = get_task(name), params.task(name)
    task.prepare(cfg, tmp_path / "data")
    prepared, data = length_data.load(tmp_path / "data"), task.load_data(tmp_path / "data")
    assert set(data.splits) == {"train", "val", "test"} and data.splits["val"] and task.tuning_data(cfg, data) is data
    for n, sources in prepared.splits["train"].items():
        kept, held = data.splits["train"][n], data.splits["val"].get(n, sources[:0])
        assert _rows(torch.cat([kept, held])) == _rows(sources) and len(kept) >= 1
        assert len(held) == (min(16, max(1, len(sources) // 5)) if len(sources) >= 2 else 0)
    validate = task.validation(cfg, data, torch.device("cpu"))
    model = task.build_model(cfg.model, "rope", cfg.options("rope"), 0, task.data_info(data))
    assert set(validate(model)) == {"val_loss"}


def test_every_task_tunes_on_its_validation_split():
    for name in ("copy", "reverse", "translation", "lm"):
        task = get_task(name)
        assert task.tunes_on_validation_split
        data = object()
        assert task.tuning_data(None, data) is data


# ------------------------------------------------------------------------------------------------ choice
def test_the_rate_of_lowest_validation_loss_is_chosen_and_a_tie_goes_to_the_shared_rate():
    assert choose({0.5: 1.2, 1.0: 1.1, 2.0: 0.9}) == 2.0
    assert choose({0.5: 0.8, 1.0: 1.1, 2.0: 0.9}) == 0.5
    assert choose({0.5: 0.9, 1.0: 0.9, 2.0: 0.9}) == 1.0
    assert choose({0.5: 0.9, 1.0: 1.0, 2.0: 0.9}) == 0.5  # equally far from 1 on a log scale: the smaller
    assert choose({0.25: 0.9, 1.0: 1.0, 2.0: 0.9}) == 2.0


def test_a_diverged_rate_is_never_chosen_and_a_sweep_where_every_rate_diverged_fails():
    assert choose({0.5: 1.0, 1.0: math.inf, 2.0: 0.9}) == 2.0
    assert choose({0.5: 1.0, 1.0: math.nan, 2.0: math.inf}) == 0.5
    with pytest.raises(ValueError, match="every learning rate of the sweep diverged"):
        choose({0.5: math.inf, 1.0: math.nan})


def test_the_sweep_goes_on_past_a_rate_that_diverges(tmp_path, monkeypatch):
    import pelab.runner.tune as tune
    from pelab.training.loop import DivergedError

    params = smoke_params(tmp_path, tune={"tasks": ["copy"]})
    get_task("copy").prepare(params.task("copy"), tmp_path / "data")
    real = tune.train_runs

    def diverging_at_2x(p, *args, **kwargs):
        if p.task("copy").train.lr == 2 * params.task("copy").train.lr:
            raise DivergedError("loss nan at step 3")
        return real(p, *args, **kwargs)

    monkeypatch.setattr(tune, "train_runs", diverging_at_2x)
    choice = sweep(params, "copy", "rope", tmp_path / "data", tmp_path / "sweep")
    assert choice["val_loss"]["x2"] is None and choice["chosen_scale"] in (0.5, 1.0)
    assert json.loads((tmp_path / "sweep" / "choice.json").read_text())["val_loss"]["x2"] is None


def test_a_kept_run_without_its_curves_is_not_restored_where_curves_are_asked_for(tmp_path):
    from pelab.runner.kept_runs import KeptRuns

    run = tmp_path / "run"
    io.write_json(run / "run.json", {"seed": 0, "task": "copy"})
    (run / "model.pt").write_bytes(b"weights")
    store = KeptRuns(tmp_path / "kept")
    store.keep(0, run, None)
    assert not store.restore(0, {"task": "copy"}, tmp_path / "out", tmp_path / "live")
    assert store.restore(0, {"task": "copy"}, tmp_path / "out", None)
    (tmp_path / "curves").mkdir()
    (tmp_path / "curves" / "loss.tsv").write_text("step\tloss\n0\t1.0\n")
    store.keep(0, run, tmp_path / "curves")
    assert store.restore(0, {"task": "copy"}, tmp_path / "out2", tmp_path / "live")
    assert (tmp_path / "live" / "loss.tsv").read_text() == "step\tloss\n0\t1.0\n"


def test_where_sweep_and_tuned_runs_are_kept(tmp_path):
    assert kept_folder(tmp_path, 1.0) == tmp_path  # the train stage's runs
    assert kept_folder(tmp_path, 2.0) == tmp_path / "tuned" / "x2"
    assert kept_folder(tmp_path, 0.5, apart=True) == tmp_path / "sweep" / "x0.5"
    assert kept_folder(tmp_path, 1.0, apart=True) == tmp_path / "sweep" / "x1"
    assert kept_folder(None, 2.0) is None


class Untouchable:
    """A split that fails on any use: the sweep must never read a test split."""

    def __getattr__(self, name):
        raise AssertionError(f"the sweep read a test split ({name})")

    def __len__(self):
        raise AssertionError("the sweep read a test split (len)")


def test_the_sweep_chooses_on_validation_loss_reading_no_test_data_and_runs_once(tmp_path, monkeypatch):
    params = smoke_params(tmp_path, tune={"scales": [0.5, 1.0, 4.0], "seed": 1, "tasks": ["copy"]})
    task = get_task("copy")
    task.prepare(params.task("copy"), tmp_path / "data")
    real_load = type(task).load_data

    def no_test_data(self, data_dir):
        data = real_load(self, data_dir)
        return CopyData({"train": data["train"], "val": data["val"], "test": Untouchable(), "test_long": Untouchable()},
                        data.meta)

    monkeypatch.setattr(type(task), "load_data", no_test_data)
    real_train, trained = runner_train.train, []

    def recording(models, *args, **kwargs):
        trained.append(len(models))
        return real_train(models, *args, **kwargs)

    monkeypatch.setattr(runner_train, "train", recording)
    kept, out = tmp_path / ".kept" / "copy" / "rope", tmp_path / "sweep"
    choice = sweep(params, "copy", "rope", tmp_path / "data", out, kept)
    assert trained == [1, 1, 1]
    losses = {s: best_val_loss(out / f"x{s:g}" / "seed_1") for s in (0.5, 1.0, 4.0)}
    logged = {s: min(float(row["val_loss"]) for row in io.read_csv(out / f"x{s:g}" / "seed_1" / "history.csv"))
              for s in losses}  # the lowest over the logged steps, not the last
    assert losses == pytest.approx(logged)
    assert choice["chosen_scale"] == min(losses, key=losses.get)
    assert choice["val_loss"] == {f"x{s:g}": v for s, v in losses.items()}
    assert choice["chosen_lr"] == pytest.approx(params.task("copy").train.lr * choice["chosen_scale"])
    assert io.read_json(out / "choice.json") == json.loads(json.dumps(choice))
    shutil.rmtree(out)  # as DVC does before it reruns the stage
    assert sweep(params, "copy", "rope", tmp_path / "data", out, kept) == choice
    assert trained == [1, 1, 1]  # the second sweep trains nothing


def test_a_chosen_shared_rate_restores_the_shared_runs_and_another_trains_every_seed(tmp_path, monkeypatch):
    import pelab.runner.tune as tune

    params = smoke_params(tmp_path, tune={"tasks": ["copy"]}, seeds=[0, 1])
    get_task("copy").prepare(params.task("copy"), tmp_path / "data")
    kept = tmp_path / ".kept" / "copy" / "rope"
    shared = [run_dir(tmp_path / "runs", "copy", "rope", seed) for seed in (0, 1)]
    lives = [run_dir(tmp_path / "dvclive", "copy", "rope", seed) for seed in (0, 1)]  # as the train stage logs
    runner_train.train_runs(params, "copy", "rope", [0, 1], tmp_path / "data", shared, device="cpu", kept=kept,
                            live_dirs=lives)
    real_train, trained = runner_train.train, []

    def recording(models, *args, **kwargs):
        trained.append(len(models))
        return real_train(models, *args, **kwargs)

    monkeypatch.setattr(runner_train, "train", recording)
    # copy tunes on its validation split, so a sweep run is an ordinary run: the sweep trains x0.5 and x2 (x1 is the
    # shared run of seed 0), and at 2x only seed 1 trains (seed 0's run at 2x is the sweep's)
    for forced, expected in ((1.0, [1, 1]), (2.0, [1])):
        monkeypatch.setattr(tune, "choose", lambda losses, s=forced: s)
        outs = [run_dir(tmp_path / f"tuned_{forced:g}", "copy", "rope", seed) for seed in (0, 1)]
        tune_runs(params, "copy", "rope", tmp_path / "data", tmp_path / f"sweep_{forced:g}", outs, kept=kept)
        assert trained == expected, forced
        trained.clear()
        if forced == 1.0:  # the shared-rate runs themselves
            assert [(o / "model.pt").read_bytes() for o in outs] == [(o / "model.pt").read_bytes() for o in shared]
        else:
            assert io.read_json(outs[0] / "run.json")["train"]["lr"] == pytest.approx(2 * params.task("copy").train.lr)


# ------------------------------------------------------------------------------------------------ ranking
def test_ranks_put_the_best_first_and_tie_at_the_mean_rank():
    assert ranks({"a": 0.9, "b": 0.5, "c": 0.7}, higher_is_better=True) == {"a": 1.0, "b": 3.0, "c": 2.0}
    assert ranks({"a": 0.9, "b": 0.5, "c": 0.7}, higher_is_better=False) == {"a": 3.0, "b": 1.0, "c": 2.0}
    assert ranks({"a": 1.0, "b": 1.0, "c": 0.0}, higher_is_better=True) == {"a": 1.5, "b": 1.5, "c": 3.0}


def _fake_study(tmp_path, values: dict[str, dict[str, list[float]]], scales: dict[str, float]):
    """Records of copy runs (test_long token accuracy) at the shared and tuned rates, and sweep choices."""
    params = smoke_params(tmp_path, tune={"tasks": ["copy"]}, seeds=[0, 1, 2], **{"pe": {"schemes": list(scales)}})
    for scheme, ways in values.items():
        io.write_json(tmp_path / "runs" / "sweep" / "copy" / scheme / "choice.json",
                      {"val_loss": {"x0.5": 1.0, "x1": 0.5, "x2": 0.7}, "chosen_scale": scales[scheme],
                       "chosen_lr": 0.003 * scales[scheme], "shared_lr": 0.003})
        for way, root in (("shared", tmp_path / "results"), ("tuned", tmp_path / "results" / "tuned")):
            for seed, value in enumerate(ways[way]):
                rows = [{"split": "test_long", "length": "all", "metric": "token_accuracy", "value": value},
                        {"split": "test_long", "length": "5", "metric": "token_accuracy", "value": -1.0}]
                io.write_jsonl(run_dir(root, "copy", scheme, seed) / "records.jsonl", rows)
    return params


def test_the_tuned_ranking_pairs_seeds_and_orders_both_ways(tmp_path):
    values = {"none": {"shared": [0.1, 0.2, 0.3], "tuned": [0.1, 0.2, 0.3]},
              "rope": {"shared": [0.5, 0.6, 0.7], "tuned": [0.2, 0.3, 0.4]},
              "alibi": {"shared": [0.4, 0.4, 0.4], "tuned": [0.8, 0.9, 0.7]}}
    params = _fake_study(tmp_path, values, {"none": 1.0, "rope": 0.5, "alibi": 2.0})
    table = tuning_table(params, tmp_path / "runs", tmp_path / "results")
    copy = table["tasks"]["copy"]
    assert (copy["split"], copy["metric"], copy["higher_is_better"]) == ("test_long", "token_accuracy", True)
    assert copy["ranks"]["shared_mean"] == {"none": 3.0, "rope": 1.0, "alibi": 2.0}
    assert copy["ranks"]["tuned_mean"] == {"none": 3.0, "rope": 2.0, "alibi": 1.0}
    assert copy["ranks"]["shared_best"] == {"none": 3.0, "rope": 1.0, "alibi": 2.0}  # 0.3, 0.7, 0.4
    assert copy["kendall_tau"]["mean"] == pytest.approx(1 / 3)
    rope = copy["schemes"]["rope"]
    assert rope["shared"]["per_seed"] == [0.5, 0.6, 0.7] and rope["tuned"]["best"] == 0.4
    assert rope["shared"]["mean"] == pytest.approx(0.6) and rope["shared"]["sd"] == pytest.approx(0.1)
    assert rope["difference"]["mean"] == pytest.approx(-0.3) and rope["difference"]["p"] == pytest.approx(0.25)
    assert rope["chosen_scale"] == 0.5
    assert math.isclose(table["mrr"]["main"]["tuned"]["alibi"], 1.0)
    assert table["seeds"] == [0, 1, 2] and table["scales"] == [0.5, 1.0, 2.0]


def test_the_report_states_the_tuned_ranking_in_the_study_s_order(tmp_path):
    from conftest import study_of

    from pelab.report.tuning import section

    values = {"none": {"shared": [0.1, 0.2, 0.3], "tuned": [0.1, 0.2, 0.3]},
              "rope": {"shared": [0.5, 0.6, 0.7], "tuned": [0.0, 0.1, 0.2]}}
    params = _fake_study(tmp_path, values, {"none": 1.0, "rope": 0.5})
    table = json.loads(json.dumps(tuning_table(params, tmp_path / "runs", tmp_path / "results")))
    ctx = type("Ctx", (), {"tuning": table, "params": study_of(params)})()
    text = "\n".join(section(ctx))
    assert "| `none` | 1.0000 / 0.5000 / 0.7000 | 0.003 (1×) | 0.200 ± 0.100 (2) | 0.200 ± 0.100 (1) |" in text
    assert text.index("| `none`") < text.index("| `rope`")
    assert "shared rope > none; tuned none > rope" in text
    assert ("The sweep moved the rate of `rope`; the others keep the shared rate. `rope` chose an end of the grid"
            in text)
    ctx.tuning = {"tasks": {}}
    assert "params `tune` lists no task" in "\n".join(section(ctx))
