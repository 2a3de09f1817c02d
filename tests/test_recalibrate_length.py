"""Recalibration in the length study (tasks/length/recalibrate.py): the fine-tune's lengths and sequences, PoSE's
positions, the budget, and a fine-tuned run as a run in both architectures: resumed to the same weights, scored
beside its base run."""

from __future__ import annotations

import shutil

import pytest
import torch
from conftest import smoke_raw
from test_recalibrate import assert_same_weights, kill_the_third_fine_tune

from pelab import io
from pelab.params import parse_params
from pelab.tasks.length.recalibrate import finetune_config, pose_positions, with_longer_lengths


def _raw(tasks, schemes=("rope", "none"), **evaluation):
    raw = smoke_raw(tasks=[], length_tasks=list(tasks), length_schemes=list(schemes), seeds=[0, 1])
    raw["length"]["data"] = {**raw["length"]["data"], "train_max": 3, "test_max": 8, "n_train": 96}
    raw["length"]["eval"] = {**raw["length"]["eval"], "recalibrate": list(schemes), "recalibrate_share": 0.5,
                             "recalibrate_methods": ["long", "pi", "pose"], **evaluation}
    return raw


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Reverse (encoder) and addition (decoder), rope and none, two seeds each, trained at smoke size on 1..3."""
    from pelab.runner.checkpoint import run_dir
    from pelab.runner.train import train_runs
    from pelab.tasks import get_task

    root = tmp_path_factory.mktemp("recal_length")
    params = parse_params(_raw(["reverse", "addition_causal"]))
    for task in ("reverse", "addition_causal"):
        get_task(task).prepare(params.task(task), root / "data" / task)
        for scheme in ("rope", "none"):
            train_runs(params, task, scheme, [0, 1], root / "data" / task,
                       [run_dir(root / "runs", task, scheme, k) for k in (0, 1)], device="cpu")
    return params, root


def test_the_fine_tune_reads_lengths_to_m_n_with_new_sequences_none_a_test_one(trained):
    from pelab.tasks import get_task

    params, root = trained
    task, cfg = get_task("reverse"), params.task("reverse")
    data = task.load_data(root / "data" / "reverse")
    tuning = finetune_config(cfg)
    assert tuning.data.train_max == 6 and tuning.train.steps == 5
    assert tuning.train.lr == pytest.approx(cfg.train.lr * 0.1)
    longer = with_longer_lengths(data, 6)
    assert sorted(longer.splits["train"]) == [1, 2, 3, 4, 5, 6]
    assert sorted(longer.splits["val"]) == sorted(data.splits["val"]) + [4, 5, 6]
    for n in (1, 2, 3):  # the trained lengths: the run's own sequences
        assert longer.splits["train"][n] is data.splits["train"][n]
    # 96 / 3 = 32 a length, or the 2^n − 4 binary strings that are not one of its 4 test sequences; a fifth held out
    for n, (n_train, n_val) in {4: (10, 2), 5: (23, 5), 6: (26, 6)}.items():
        train, val = longer.splits["train"][n], longer.splits["val"][n]
        assert (len(train), len(val)) == (n_train, n_val) and train.shape[1] == n
        drawn = {tuple(r) for r in torch.cat([train, val]).tolist()}
        assert len(drawn) == n_train + n_val and not drawn & {tuple(r) for r in data.splits["test"][n].tolist()}
    again = with_longer_lengths(data, 6)  # the data seed's: the same for every run and method
    torch.testing.assert_close(again.splits["train"][5], longer.splits["train"][5])
    assert with_longer_lengths(data, 3) is data
    batch = task.batches(tuning, longer, 7)
    assert {batch(step)[0].shape[1] for step in range(60)} == {2 * n + 1 for n in range(1, 7)}  # every length 1..6


def test_pose_positions_keep_a_row_whole_within_m_times_the_trained_row():
    """Two chunks: 0..r−1 with r ≤ ⌈T/2⌉, then consecutive from r + u, the last below M·row_length(N)."""
    generator, skips = torch.Generator().manual_seed(0), set()
    for length in (1, 2, 5, 7):
        for _ in range(40):
            p = pose_positions(length, 14, generator)
            assert len(p) == length and p[0] == 0 and int(p.max()) <= 13 and torch.all(torch.diff(p) >= 1)
            jumps = (torch.diff(p) != 1).nonzero()
            if len(jumps):
                r = int(jumps[0]) + 1
                assert len(jumps) == 1 and r <= (length + 1) // 2 and p[:r].tolist() == list(range(r))
                skips.add(int(p[r]) - r)
    assert len(skips) > 3


@pytest.mark.parametrize("change, message", [
    ({"recalibrate": ["rope", "roap"]}, "length.eval.recalibrate lists unknown scheme(s) ['roap']; valid choices"),
    ({"recalibrate_multiple": 3}, "the fine-tune's longest input length 9 (M·N) must not exceed the longest test "
                                  "length (length.data.test_max=8)"),
    ({"recalibrate_lr": 0}, "length.eval.recalibrate_lr must be > 0, got 0"),
])
def test_bad_length_recalibration_settings_fail_in_one_line(change, message):
    with pytest.raises(ValueError) as error:
        parse_params(_raw(["reverse"], **change))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_killed_length_fine_tune_resumes_to_the_same_weights(trained, tmp_path, monkeypatch):
    import pelab.runner.recalibrate as recal

    params, root = trained
    runs = tmp_path / "runs"
    shutil.copytree(root / "runs", runs)
    kept = tmp_path / ".kept" / "addition_causal" / "rope"
    data = root / "data" / "addition_causal"
    whole = recal.recalibrate_runs(params, "addition_causal", "rope", [1], data, runs, device="cpu")
    assert [p.relative_to(runs).as_posix() for p in whole] == [
        f"addition_causal/rope/recalibrated/{m}/seed_1" for m in ("long", "pi", "pose")]
    weights = {p.parent.name: torch.load(p / "model.pt", weights_only=True) for p in whole}
    shutil.rmtree(runs / "addition_causal" / "rope" / "recalibrated")
    calls = kill_the_third_fine_tune(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        recal.recalibrate_runs(params, "addition_causal", "rope", [1], data, runs, device="cpu", kept=kept)
    shutil.rmtree(runs / "addition_causal" / "rope" / "recalibrated")
    again = recal.recalibrate_runs(params, "addition_causal", "rope", [1], data, runs, device="cpu", kept=kept)
    assert len(calls) == 4  # long and pi restored; pose resumed
    assert_same_weights(again, weights)
    meta = io.read_json(again[1] / "run.json")
    assert meta["method"] == "pi" and meta["multiple"] == 2 and meta["data"]["train_max"] == 6


def test_length_fine_tunes_are_scored_beside_their_base_runs_in_both_architectures(trained, tmp_path):
    import pandas as pd

    from pelab.analysis.variants import with_variants
    from pelab.runner.evaluate import evaluate_runs
    from pelab.runner.recalibrate import recalibrate_runs

    params, root = trained
    runs = tmp_path / "runs"
    shutil.copytree(root / "runs", runs)
    records = []
    for task in ("reverse", "addition_causal"):
        for scheme in ("rope", "none"):
            recalibrate_runs(params, task, scheme, [0, 1], root / "data" / task, runs, device="cpu")
            out = tmp_path / "results" / task / scheme
            evaluate_runs(params, task, scheme, runs, root / "data" / task, out, recalibrated=True)
            records += [r for k in (0, 1) for r in io.read_jsonl(out / f"seed_{k}" / "records.jsonl")]
    shown, names = with_variants(pd.DataFrame(records))
    assert {"rope+long-tuned", "rope+PI-tuned", "rope+PoSE-tuned", "rope+PI-untuned", "none+long-tuned"} <= set(names)
    assert "none+PI-tuned" not in names and "rope+PoSE-untuned" not in names
    for task in ("reverse", "addition_causal"):
        mine = shown[shown["task"] == task]
        for name in ("rope+PI-tuned", "none+long-tuned", "rope+PI-untuned"):
            rows = mine[(mine["pe"] == name) & (mine["metric"] == "token_accuracy")]
            assert sorted(rows[rows["split"] == "test"]["length"].unique().tolist()) == list(range(1, 9))
            ranges = rows[rows["split"].isin(["in", "beyond"])]
            assert len(ranges) == 4 and ranges["value"].between(0, 1).all()
            effective = mine[(mine["pe"] == name) & (mine["split"] == "effective")]
            assert len(effective) == 2 and effective["value"].between(0, 8).all()
        steps = mine[(mine["pe"] == "rope+PoSE-tuned") & (mine["split"] == "train") & (mine["metric"] == "steps")]
        assert steps["value"].tolist() == [5.0, 5.0]
        # the run read with PI's module at s = 2 is another reading of the same weights within N
        untuned = mine[(mine["pe"] == "rope+PI-untuned") & (mine["split"] == "test")
                       & (mine["metric"] == "token_accuracy")]
        assert len(untuned) == 16


def test_the_length_reading_judges_accuracy_beyond_the_fine_tunes_lengths():
    """Synthetic records, N = 2, fine-tuned on 1..4, scored to 8: the far split is the mean over 5..8; PI's cost
    within N and gain there have accuracy's sign (higher is better), against the run before, the control after."""
    import pandas as pd

    from pelab.report.length import FAR, length_measure, with_far
    from pelab.report.recalibration import recalibration_reading

    # (in, accuracy at each length 5..8) per name
    at = {"rope": (0.9, [0.5, 0.4, 0.3, 0.2]), "rope+PI-untuned": (0.8, [0.6, 0.5, 0.4, 0.3]),
          "rope+long-tuned": (0.95, [0.6, 0.5, 0.5, 0.4]), "rope+PI-tuned": (0.93, [0.7, 0.7, 0.6, 0.6])}
    rows = [{"task": "reverse", "pe": name, "seed": seed, "split": "in", "length": "all",
             "metric": "token_accuracy", "value": inside + 0.001 * seed} for name, (inside, _) in at.items()
            for seed in range(3)]
    rows += [{"task": "reverse", "pe": name, "seed": seed, "split": "test", "length": n,
              "metric": "token_accuracy", "value": value + 0.002 * seed}
             for name, (_, far) in at.items() for seed in range(3) for n, value in zip(range(5, 9), far)]
    rows += [{"task": "reverse", "pe": "rope", "seed": 0, "split": "test", "length": 4, "metric": "token_accuracy",
              "value": 1.0}]  # within the fine-tune's lengths: not in the far mean
    records = with_far(pd.DataFrame(rows), {"reverse": 4})
    far = records[(records["split"] == FAR) & (records["pe"] == "rope")].sort_values("seed")
    assert far["value"].tolist() == pytest.approx([0.35, 0.352, 0.354])
    measure = length_measure("reverse", 2, 2, 8)
    assert (measure.far, measure.far_label, measure.beyond_label) == (FAR, "at 5..8", "beyond 2N")
    assert length_measure("reverse", 2, 3, 6).far == "beyond"  # the fine-tune reaches the longest test length
    table, sentences = recalibration_reading(records, list(at)[1:], measure, 2, 0.5)
    cells = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
             for line in table.splitlines() if line.startswith("| `")}
    pi = cells["`rope+PI-tuned`"]
    assert pi[1] == "`rope+PI-untuned`" and pi[4] == "`rope+long-tuned`"
    assert pi[2].startswith("+0.100 [") and pi[3].startswith("+0.100 [")  # cost within N; gain at 5..8, before
    assert pi[5].startswith("+0.020 [") and pi[6].startswith("+0.150 [")  # after, against the control
    assert cells["`rope+long-tuned`"][6].startswith("+0.150 [")  # the control against the run
    assert "fine-tuned on input lengths 1..4 for 50% of its training steps" in sentences[0]
    assert "token accuracy" in sentences[0] and "No verdict beyond 2N changes sign" in sentences[1]


def test_pose_is_read_against_pis_module_even_where_pi_is_not_fine_tuned(trained, tmp_path):
    """PoSE's "before" is the run read with PI's module: scored whether or not PI is a listed method."""
    from pelab.runner.recalibrate import recalibrate_runs, recalibrated_rows
    from pelab.tasks import get_task

    _, root = trained
    params = parse_params(_raw(["reverse", "addition_causal"], recalibrate_methods=["long", "pose"]))
    runs = tmp_path / "runs"
    shutil.copytree(root / "runs", runs)
    data = root / "data" / "reverse"
    recalibrate_runs(params, "reverse", "rope", [0], data, runs, device="cpu")
    rows = recalibrated_rows(params, runs, "reverse", "rope", 0, get_task("reverse").load_data(data),
                             torch.device("cpu"))
    splits = {r["split"] for r in rows}
    assert {"in_posetuned", "in_longtuned", "in_piuntuned"} <= splits and "in_pituned" not in splits
