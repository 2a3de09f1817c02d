"""Recalibration (tasks/lm/recalibrate.py, runner/recalibrate.py): each method's module against its formula, PoSE's rows
against the reference's rule, the fine-tune's budget, and a fine-tuned run as a run: kept, resumed to the same
weights, scored beside its base run."""

from __future__ import annotations

import math
import shutil

import pytest
import torch
from conftest import smoke_raw

from pelab import io
from pelab.params import parse_params
from pelab.positional import build_positional_encoding
from pelab.positional.rope_extensions import trained_inverse_frequencies
from pelab.positional.recalibration import METHODS, method
from pelab.tasks.lm.recalibrate import finetune_config, pose_batch


def _rope(d_model: int = 32, n_heads: int = 2):
    return build_positional_encoding("rope", d_model=d_model, n_heads=n_heads, causal=True, n_layers=1)


@pytest.mark.parametrize("name, factor, temperature", [("pi", 2.0, 1.0), ("ntk", 1.0, 1.0), ("yarn", 2.0, None)])
def test_each_method_reads_every_length_at_its_fixed_factor(name, factor, temperature):
    """PI: θ/2; NTK: base·2^(d/(d−2)) (YaRN eq. 16); yarn: YaRN at s = 2 with m = 0.1·ln 2 + 1 (eq. 22); the same
    module whatever the row's length (the fine-tuned model's trained length is 2L)."""
    rope, context = _rope(), 64
    module = method(name).module(rope, context, 2)
    d = rope.head_dim
    theta = trained_inverse_frequencies(d, rope.base)
    expected = {"pi": theta / 2, "ntk": trained_inverse_frequencies(d, rope.base * 2 ** (d / (d - 2))),
                "yarn": None}[name]
    if expected is not None:
        torch.testing.assert_close(module.inverse_frequencies.double(), expected, rtol=1e-6, atol=0)
    else:  # the fastest pair kept, the slowest divided by 2
        assert module.inverse_frequencies[0] == pytest.approx(float(theta[0]), rel=1e-6)
        assert module.inverse_frequencies[-1] == pytest.approx(float(theta[-1]) / 2, rel=1e-6)
    assert module.attention_factor == pytest.approx(temperature or 0.1 * math.log(2) + 1)
    positions = torch.arange(8 * context)
    torch.testing.assert_close(module.angles(positions)[:, 0], positions.float() * module.inverse_frequencies[0])
    assert method("long").module(rope, context, 2) is rope


def test_the_settings_name_the_methods_in_their_order():
    from pelab.tasks.recalibration import METHOD_NAMES

    assert METHOD_NAMES == tuple(m.name for m in METHODS)


def test_rope_s_extensions_apply_only_where_the_scheme_has_them():
    alibi = build_positional_encoding("alibi", d_model=32, n_heads=2, causal=True, n_layers=1)
    assert [m.name for m in METHODS if m.applies_to(alibi)] == ["long"]
    assert [m.name for m in METHODS if m.applies_to(_rope())] == ["long", "pi", "ntk", "yarn", "pose", "pose_tokens",
                                                                    "drope"]
    from pelab.analysis.variants import VARIANTS

    for m in METHODS:  # no suffix ends with a zero-shot variant's: with_variants reads each row under one name
        assert not any(m.suffix.endswith(other) for other in VARIANTS if other != m.suffix)
        assert m.suffix in VARIANTS and m.suffix.endswith("tuned")


def test_drope_reads_the_trained_weights_with_no_positions_and_recalibrates_at_l():
    """Gelberg et al. 2025: RoPE dropped after training. The model with DroPE's module in place is NoPE's model with
    the same weights (logits equal to the bit, and different from the run's), and its fine-tune reads rows of L
    tokens at the others' budget."""
    from pelab.model.config import ModelConfig
    from pelab.model.sequence import build_sequence_model
    from pelab.positional.recalibration import in_place

    cfg = ModelConfig(d_model=32, n_layers=2, n_heads=2, d_ff=64)
    rope = build_sequence_model("rope", 17, cfg, None, 0, causal=True).eval()
    dropped = in_place(rope, method("drope"), context=16, multiple=2)
    nope = build_sequence_model("none", 17, cfg, None, 0, causal=True).eval()
    nope.load_state_dict(rope.state_dict())  # the same weights: RoPE has no parameter of its own
    x = torch.randint(0, 17, (3, 12), generator=torch.Generator().manual_seed(0))
    positions = torch.arange(12)
    with torch.no_grad():
        assert torch.equal(dropped(x, positions)[0], nope(x, positions)[0])
        assert not torch.allclose(dropped(x, positions)[0], rope(x, positions)[0])
    assert type(dropped.pe).__name__ == type(nope.pe).__name__ and rope.pe.variants == "rope_extensions"
    raw = smoke_raw(tasks=[], lm_tasks=["lm"], lm_schemes=["rope"])
    raw["lm"]["eval"] = {**raw["lm"]["eval"], "recalibrate": ["rope"]}
    lm = parse_params(raw).task("lm")
    assert finetune_config(lm, method("drope")).data.context == lm.data.context
    assert finetune_config(lm, method("drope")).train == finetune_config(lm, method("long")).train
    assert finetune_config(lm, method("long")).data.context == 2 * lm.data.context
    from pelab.positional.recalibration import methods_for  # with QK-norm: the reference's qk_norm_nope target

    raw = smoke_raw(tasks=[], lm_tasks=["lm"], lm_schemes=["rope+qk_norm"])
    raw["lm"]["eval"] = {**raw["lm"]["eval"], "recalibrate": ["rope+qk_norm"]}
    assert "drope" in [m.name for m in methods_for(parse_params(raw).task("lm"), "rope+qk_norm", True)]


def test_pose_rows_are_two_chunks_of_the_long_row_at_skip_wise_positions():
    """The reference's rule with two chunks: the first r ≤ ⌈(L+1)/2⌉ tokens at positions 0..r−1, then L + 1 − r
    contiguous tokens ending at e ≥ L + 1, at positions r + u.. with u ≤ M·L − L; no input position beyond M·L − 1. A
    passkey row (L + 1 tokens) is read whole at its group's positions."""
    context, multiple, batch = 8, 2, 8
    text = torch.arange(6)[:, None] * 1000 + torch.arange(multiple * context + 1)[None, :]  # (6, 2L + 1)
    passkey = -1 - torch.arange(2)[:, None] * 1000 - torch.arange(context + 1)[None, :]  # (2, L + 1)
    generator = torch.Generator().manual_seed(0)
    seen_skips = set()
    for _ in range(50):
        inputs, targets, positions = pose_batch(text, passkey, context, generator, groups=4)
        assert inputs.shape == targets.shape == (batch, context) and positions.shape == (4, context)
        torch.testing.assert_close(inputs[:, 1:], targets[:, :-1])
        torch.testing.assert_close(torch.cat([inputs[6:], targets[6:, -1:]], 1), passkey)  # whole, in order
        for g in range(4):
            p = positions[g]
            r = int((torch.diff(p) != 1).nonzero()[0]) + 1 if (torch.diff(p) != 1).any() else None
            assert p[0] == 0 and int(p.max()) <= multiple * context - 1
            if r is not None:
                assert 1 <= r <= (context + 2) // 2 and p[:r].tolist() == list(range(r))
                skip = int(p[r]) - r
                assert 1 <= skip <= multiple * context - context and torch.all(torch.diff(p[r:]) == 1)
                seen_skips.add(skip)
            for row in (2 * g, 2 * g + 1):
                if row >= 6:
                    continue
                tokens = torch.cat([inputs[row], targets[row, -1:]]) - 1000 * row  # offsets within the long row
                first = int((torch.diff(tokens) != 1).nonzero()[0]) + 1 if (torch.diff(tokens) != 1).any() else 0
                if first:  # chunk 1 is the row's opening, chunk 2 contiguous, ending within the long row
                    assert tokens[:first].tolist() == list(range(first))
                    assert torch.all(torch.diff(tokens[first:]) == 1) and int(tokens[-1]) <= multiple * context
    assert len(seen_skips) > 3  # the skip is drawn, not fixed


def test_pose_reads_the_same_draws_as_every_method_with_shorter_passkey_rows(trained):
    """PoSE's rows come from the stream every method reads: the same text rows, and passkey rows with the same keys
    (the answer ends every one) at L + 1 tokens."""
    from pelab.tasks import get_task
    from pelab.tasks.lm.data.passkey import DIGITS

    params, root = trained
    task, cfg = get_task("lm"), params.task("lm")
    data = task.load_data(root / "data")
    tuning = finetune_config(cfg)
    long_inputs, long_targets = task.batches(tuning, data, 3)(0)
    text, passkey = task.rows(tuning, data, 3, passkey_length=cfg.data.context + 1)(0)
    n_text = len(text)
    torch.testing.assert_close(text[:, :-1], long_inputs[:n_text])
    assert passkey.shape == (len(long_inputs) - n_text, cfg.data.context + 1)
    torch.testing.assert_close(passkey[:, -DIGITS:], long_targets[n_text:, -DIGITS:])


def test_the_fine_tune_is_a_stated_share_of_the_budget_at_m_times_l():
    raw = smoke_raw(tasks=[], lm_tasks=["lm"], lm_schemes=["rope"])
    raw["lm"]["train"] = {**raw["lm"]["train"], "steps": 200, "lr": 0.006}
    raw["lm"]["eval"] = {**raw["lm"]["eval"], "recalibrate": ["rope"], "recalibrate_share": 0.1}
    cfg = parse_params(raw).task("lm")
    tuning = finetune_config(cfg)
    assert tuning.train.steps == 20 and tuning.train.lr == pytest.approx(0.0006) and tuning.train.warmup_steps == 1
    assert tuning.data.context == 2 * cfg.data.context and tuning.train.log_every == 4
    equal = finetune_config(cfg, method("pose_tokens")).train  # PoSE at the others' tokens: M times the steps
    assert (equal.steps, equal.warmup_steps, equal.log_every, equal.lr) == (40, 2, 8, tuning.train.lr)
    assert tuning.train.batch_size == cfg.train.batch_size and tuning.model == cfg.model


@pytest.mark.parametrize("change, message", [
    ({"recalibrate_methods": ["long", "rerope"]}, "unknown recalibration method 'rerope'; valid choices: long, pi"),
    ({"recalibrate": ["rope", "roap"]}, "lm.eval.recalibrate lists unknown scheme(s) ['roap']; valid choices: none,"),
    ({"recalibrate": ["rope"], "recalibrate_multiple": 4}, "must not exceed the longest evaluation multiple (2"),
    ({"recalibrate_share": 0.0}, "lm.eval.recalibrate_share must be in (0, 1]"),
])
def test_bad_recalibration_settings_fail_in_one_line(change, message):
    raw = smoke_raw(tasks=[], lm_tasks=["lm"], lm_schemes=["rope", "alibi"])
    raw["lm"]["eval"] = {**raw["lm"]["eval"], **change}
    with pytest.raises(ValueError) as error:
        parse_params(raw)
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A smoke LM study with rope and alibi recalibrated: two seeds of each trained, then prepared for fine-tunes."""
    from pelab.runner.train import train_runs
    from pelab.runner.checkpoint import run_dir
    from pelab.tasks import get_task

    root = tmp_path_factory.mktemp("recal")
    raw = smoke_raw(tasks=[], lm_tasks=["lm"], lm_schemes=["rope", "alibi"], seeds=[0, 1])
    raw["lm"]["eval"] = {**raw["lm"]["eval"], "recalibrate": ["rope", "alibi"], "recalibrate_share": 0.5,
                         "recalibrate_methods": ["long", "pi", "pose", "drope"]}
    params = parse_params(raw)
    get_task("lm").prepare(params.task("lm"), root / "data")
    for scheme in ("rope", "alibi"):
        train_runs(params, "lm", scheme, [0, 1], root / "data",
                   [run_dir(root / "runs", "lm", scheme, k) for k in (0, 1)], device="cpu")
    return params, root


def test_a_killed_fine_tune_resumes_to_the_same_weights_and_a_kept_one_is_not_tuned_again(trained, tmp_path,
                                                                                        monkeypatch):
    import pelab.runner.recalibrate as recal

    params, root = trained
    runs = tmp_path / "runs"
    shutil.copytree(root / "runs", runs)
    kept = tmp_path / ".kept" / "lm" / "rope"
    whole = recal.recalibrate_runs(params, "lm", "rope", [0], root / "data", runs, device="cpu")
    assert [p.relative_to(runs).as_posix() for p in whole] == [
        f"lm/rope/recalibrated/{m}/seed_0" for m in ("long", "pi", "pose", "drope")]
    weights = {p.parent.name: torch.load(p / "model.pt", weights_only=True) for p in whole}
    shutil.rmtree(runs / "lm" / "rope" / "recalibrated")

    calls = kill_the_third_fine_tune(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        recal.recalibrate_runs(params, "lm", "rope", [0], root / "data", runs, device="cpu", kept=kept)
    assert (kept / "recalibrated" / "pi" / "seed_0" / "model.pt").exists()
    assert torch.load(kept / "recalibrated" / "pose" / "state.pt", weights_only=False)["step"] == 2
    shutil.rmtree(runs / "lm" / "rope" / "recalibrated")  # as DVC does before it reruns the stage
    again = recal.recalibrate_runs(params, "lm", "rope", [0], root / "data", runs, device="cpu", kept=kept)
    assert len(calls) == 5  # long and pi restored; pose resumed; drope, killed before it started, trained
    assert_same_weights(again, weights)
    assert not (kept / "recalibrated" / "pose" / "state.pt").exists()
    meta = io.read_json(again[1] / "run.json")
    assert meta["method"] == "pi" and meta["multiple"] == 2 and meta["cost"]["steps"] == 5


def test_fine_tuned_runs_are_scored_beside_their_base_run_and_read_as_pseudo_schemes(trained, tmp_path):
    import pandas as pd

    from pelab.analysis.variants import with_variants
    from pelab.runner.evaluate import evaluate_runs
    from pelab.runner.recalibrate import recalibrate_runs

    params, root = trained
    runs = tmp_path / "runs"
    shutil.copytree(root / "runs", runs)
    for scheme in ("rope", "alibi"):
        recalibrate_runs(params, "lm", scheme, [0, 1], root / "data", runs, device="cpu")
        evaluate_runs(params, "lm", scheme, runs, root / "data", tmp_path / "results" / "lm" / scheme,
                      recalibrated=True)
    records = pd.DataFrame([r for scheme in ("rope", "alibi") for k in (0, 1)
                            for r in io.read_jsonl(tmp_path / "results" / "lm" / scheme / f"seed_{k}" / "records.jsonl")])
    shown, names = with_variants(records)
    assert {"rope+long-tuned", "rope+PI-tuned", "rope+PoSE-tuned", "alibi+long-tuned", "rope+PI-untuned",
            "rope+DroPE-tuned", "rope+DroPE-untuned"} <= set(names)
    assert "alibi+PI-tuned" not in names and "alibi+DroPE-tuned" not in names
    assert "rope+PoSE-untuned" not in names and "rope+long-untuned" not in names
    # the run read with PI's module at s = 2: another reading of the run within L (positions halved), not the run
    untuned = shown[(shown["pe"] == "rope+PI-untuned") & (shown["split"] == "at_L") & (shown["metric"] == "ppl_sliding")]
    run = shown[(shown["pe"] == "rope") & (shown["split"] == "at_L") & (shown["metric"] == "ppl_sliding")]
    assert len(untuned) == 2 and (untuned["value"].to_numpy() != run["value"].to_numpy()).all()
    for name in ("rope+PI-tuned", "alibi+long-tuned"):
        rows = shown[(shown["pe"] == name) & (shown["split"] == "at_4L") & (shown["metric"] == "ppl_sliding")]
        assert len(rows) == 2 and rows["value"].between(1, 1e4).all()
        steps = shown[(shown["pe"] == name) & (shown["split"] == "train") & (shown["metric"] == "steps")]
        assert steps["value"].tolist() == [5.0, 5.0]
    plain = shown[(shown["pe"] == "rope") & (shown["split"] == "at_L") & (shown["metric"] == "ppl_sliding")]
    tuned = shown[(shown["pe"] == "rope+long-tuned") & (shown["split"] == "at_L") & (shown["metric"] == "ppl_sliding")]
    assert not plain["value"].reset_index(drop=True).equals(tuned["value"].reset_index(drop=True))  # another model


def test_the_before_after_table_pairs_seeds_and_names_a_verdict_that_changes():
    """Synthetic records: PI costs 1.0 within L before and 0.5 after; at 4L it gains 2.0 before (every seed) and
    loses 1.0 after against long-tuned; the table holds those paired means and the sentence names the change."""
    import pandas as pd

    from pelab.report.recalibration import lm_measure, recalibration_reading

    at = {"rope": (10.0, 20.0), "rope+PI-untuned": (11.0, 18.0), "rope+long-tuned": (9.0, 15.0),
          "rope+PI-tuned": (9.5, 16.0)}
    rows = [{"task": "lm", "pe": name, "seed": seed, "split": split, "length": "all", "metric": "ppl_sliding",
             "value": value + 0.01 * seed * (k + 1)}  # small seed noise, the same for every row of a split
            for name, values in at.items() for seed in range(3)
            for k, (split, value) in enumerate(zip(("at_L", "at_4L"), values))]
    table, sentences = recalibration_reading(pd.DataFrame(rows), list(at)[1:], lm_measure(256, 2), multiple=2,
                                             share=0.1)
    pi = next(line for line in table.splitlines() if line.startswith("| `rope+PI-tuned`"))
    cells = [c.strip() for c in pi.strip("|").split("|")]
    assert cells[1] == "`rope+PI-untuned`" and cells[4] == "`rope+long-tuned`"
    assert cells[2].startswith("+1.00 [") and cells[3].startswith("+2.00 [")
    assert cells[5].startswith("+0.50 [") and cells[6].startswith("-1.00 [")
    long = next(line for line in table.splitlines() if line.startswith("| `rope+long-tuned`"))
    assert "`rope`" in long and "-1.00 [" in long and "+5.00 [" in long
    assert "`rope`'s PI beyond L: helps before, hurts after the fine-tune" in sentences[1]
    assert "for 10% of its training steps" in sentences[0]


def kill_the_third_fine_tune(monkeypatch) -> list[str]:
    """``runner.recalibrate``'s training patched: the third fine-tune (PoSE's, whose own draws are replayed on resume)
    saves its state every step and is killed at its third logged row; returns the fine-tunes' names as they start."""
    import pelab.runner.recalibrate as recal

    real_train, calls = recal.train, []

    def killed_once(models, *args, **kwargs):
        calls.append(kwargs["desc"])
        if len(calls) == 3:
            def kill(row):
                if row["step"] == 3:
                    raise KeyboardInterrupt
            return real_train(models, *args, **{**kwargs, "save_every_s": 0.0, "on_rows": [kill]})
        return real_train(models, *args, **kwargs)

    monkeypatch.setattr(recal, "train", killed_once)
    return calls


def assert_same_weights(paths, weights) -> None:
    """Each fine-tuned run's weights (``<path>/model.pt``) those of ``weights[<method>]``."""
    for path in paths:
        for name, tensor in torch.load(path / "model.pt", weights_only=True).items():
            torch.testing.assert_close(tensor, weights[path.parent.name][name], rtol=1e-5, atol=1e-6)
