"""Bad input fails early with a ValueError that names the bad value and what to use instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from conftest import smoke_raw

from pelab import io
from pelab.cli import main
from pelab.params import load_params, parse_params
from pelab.positional import SCHEMES, build_positional_encoding, check_scheme, scheme_names, scheme_options
from pelab.positional.learned import LearnedPositionalEncoding
from pelab.tasks import get_task, task_names
from pelab.tasks.copy.config import CopyDataConfig as CopyTaskConfig
from pelab.tasks.copy.config import ModelConfig
from pelab.tasks.copy.model import build_copy_model

REPO = Path(__file__).resolve().parents[1]


def valid_choices() -> str:
    from pelab.positional.switched import SWITCHES

    # derived from the registries, never copied
    return f"{', '.join(SCHEMES)} (or <scheme>+<switch>, switches: {', '.join(SWITCHES)})"


# ---------------------------------------------------------------------------------------------
# Scheme names
# ---------------------------------------------------------------------------------------------


def test_scheme_names_are_the_registry_keys() -> None:
    assert scheme_names() == list(SCHEMES)
    for name in scheme_names():
        assert check_scheme(name) == name


@pytest.mark.parametrize("bad", ["nope", "RoPE", "rope ", ""])
def test_unknown_scheme_lists_every_registered_name(bad: str) -> None:
    expected = f"unknown positional scheme {bad!r}; valid choices: {valid_choices()}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        check_scheme(bad)
    with pytest.raises(ValueError, match=re.escape(expected)):
        build_positional_encoding(bad, d_model=16, n_heads=2)


def test_unknown_scheme_in_params_is_rejected() -> None:
    expected = f"unknown positional scheme 'nope'; valid choices: {valid_choices()}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        parse_params(smoke_raw(pe={"schemes": ["rope", "nope"]}))


# ---------------------------------------------------------------------------------------------
# Scheme hyperparameters
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("d_model", "n_heads", "shown"), [(12, 4, "3"), (20, 4, "5"), (10, 4, "2.5")])
def test_rope_odd_head_dim(d_model: int, n_heads: int, shown: str) -> None:
    with pytest.raises(ValueError, match="rope needs an even head dimension") as err:
        build_positional_encoding("rope", d_model=d_model, n_heads=n_heads)
    assert f"d_model={d_model}" in str(err.value) and f"n_heads={n_heads}" in str(err.value)
    assert f"= {shown};" in str(err.value)


def test_rope_even_head_dim_is_accepted() -> None:
    assert build_positional_encoding("rope", d_model=16, n_heads=4).head_dim == 4


def test_learned_table_too_short_check_length() -> None:
    pe = LearnedPositionalEncoding(d_model=8, n_heads=2, max_positions=16, init="sinusoidal_norm")
    pe.check_length(16)  # exactly fits
    with pytest.raises(ValueError, match=r"has 16 rows, cannot encode a sequence of length 17") as err:
        pe.check_length(17)
    assert "max_positions to at least 17" in str(err.value)


def test_learned_table_too_short_forward() -> None:
    model_cfg = ModelConfig(d_model=16, n_heads=2, d_ff=32)
    model = build_copy_model("learned", 12, model_cfg, {"max_positions": 16}, seed=0)
    logits, _ = model(torch.zeros(1, 16, dtype=torch.long))
    assert logits.shape == (1, 16, 12)
    with pytest.raises(ValueError, match=r"has 16 rows, cannot encode a sequence of length 20"):
        model(torch.zeros(1, 20, dtype=torch.long))
    with pytest.raises(ValueError, match=r"cannot encode a sequence of length 24"):
        model(torch.zeros(1, 4, dtype=torch.long), positions=torch.arange(20, 24))


def test_params_reject_a_learned_table_shorter_than_the_long_test() -> None:
    raw = smoke_raw()
    raw["copy"]["positional"]["learned"] = {"max_positions": 15}  # smoke: long_context 16
    with pytest.raises(ValueError, match=r"has 15 rows, cannot encode a sequence of length 16"):
        parse_params(raw)
    causal_only = ("xpos", "mamba")
    raw["pe"] = {"schemes": [s for s in scheme_names() if s != "learned" and s not in causal_only
                             and not s.startswith("rand_")]}
    assert parse_params(raw).task("copy").options("t5") == scheme_options("t5", raw["copy"]["positional"]["t5"])


def test_model_shape_errors_fail_when_params_load_not_inside_training() -> None:
    raw = smoke_raw()
    raw["translation"]["model"] = {**raw["translation"]["model"], "d_model": 30, "n_heads": 4}
    with pytest.raises(ValueError, match=r"translation.model.d_model=30 is not divisible by n_heads=4"):
        parse_params(raw)
    raw = smoke_raw()
    raw["copy"]["model"] = {**raw["copy"]["model"], "d_model": 24, "n_heads": 4}  # head dim 6 is fine…
    parse_params({**raw, "pe": {"schemes": ["rope"]}})
    raw["copy"]["model"] = {**raw["copy"]["model"], "d_model": 12, "n_heads": 4}  # …3 is odd: rope cannot rotate
    with pytest.raises(ValueError, match="rope needs an even head dimension"):
        parse_params({**raw, "pe": {"schemes": ["rope"]}})


def test_a_bad_translation_value_fails_before_any_task_trains() -> None:
    raw = smoke_raw()
    raw["translation"]["eval"]["decode"]["beam_size"] = 0
    with pytest.raises(ValueError, match=r"translation.eval.decode.beam_size must be >= 1, got 0"):
        parse_params(raw)
    raw = smoke_raw()
    raw["translation"]["data"]["corpus"] = "wmt"
    with pytest.raises(ValueError, match=r"unknown translation corpus 'wmt'; valid choices: multi30k, iwslt2017"):
        parse_params(raw)


def test_cuda_on_a_machine_without_it_is_rejected_at_load(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for device in ("cuda", "cuda:0"):
        with pytest.raises(ValueError, match=f"device '{device}' requested but no CUDA device is available"):
            parse_params(smoke_raw(device=device))
    with pytest.raises(ValueError, match=r"unknown device 'gpu'; valid choices: auto, cpu, cuda, cuda:N"):
        parse_params(smoke_raw(device="gpu"))
    assert parse_params(smoke_raw(device="cpu")).device == "cpu"


def test_a_task_in_another_study_s_list_is_refused_naming_its_list() -> None:
    """Each study's lists are read at the keys of its record (pelab.studies.STUDIES), and a task belongs to one."""
    with pytest.raises(ValueError, match=r"^task 'reverse' is in tasks but belongs to the length study; list it in "
                                         r"length_tasks$"):
        parse_params(smoke_raw(tasks=["copy", "reverse"]))
    with pytest.raises(ValueError, match=r"^task 'copy' is in lm_tasks but belongs to the main study; list it in "
                                         r"tasks$"):
        parse_params(smoke_raw(lm_tasks=["copy"]))
    with pytest.raises(ValueError, match=r"^lm_schemes is empty while lm_tasks is not; .*'lm_tasks=\[\]'$"):
        parse_params(smoke_raw(lm_tasks=["lm"], lm_schemes=[]))


def test_unknown_task_and_unknown_scheme_option() -> None:
    with pytest.raises(ValueError, match=r"unknown task 'sort'; valid choices: copy, translation"):
        parse_params(smoke_raw(tasks=["copy", "sort"]))
    raw = smoke_raw()
    raw["positional"]["rope"] = {"base": 10000.0, "num_buckets": 8}  # a T5 option given to rope
    with pytest.raises(ValueError, match=re.escape("unknown option(s) ['num_buckets'] in positional.rope; "
                                                   "valid options: base")):
        parse_params(raw)
    raw = smoke_raw()
    raw["copy"]["positional"]["t5"] = {"buckets": 8}
    with pytest.raises(ValueError, match=re.escape("unknown option(s) ['buckets'] in copy.positional.t5; "
                                                   "valid options: max_distance, num_buckets")):
        parse_params(raw)


# ---------------------------------------------------------------------------------------------
# Config dataclasses
# ---------------------------------------------------------------------------------------------


def test_copy_task_max_len_must_fit_context() -> None:
    CopyTaskConfig(context=19, max_len=9)  # 2·9 + 1 = 19 fits exactly
    with pytest.raises(ValueError, match=r"max_len=10 does not fit context=20") as err:
        CopyTaskConfig(context=20, max_len=10)
    assert "max_len <= 9" in str(err.value) and "context >= 21" in str(err.value)


def test_copy_task_long_max_len_must_fit_long_context() -> None:
    with pytest.raises(ValueError, match=r"long_max_len=20 does not fit long_context=40") as err:
        CopyTaskConfig(long_context=40, long_max_len=20)
    assert "long_max_len <= 19" in str(err.value) and "long_context >= 41" in str(err.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"min_len": 0}, "min_len=0"),
    ({"min_len": 5, "max_len": 4}, "min_len=5, max_len=4"),
    ({"long_min_len": 12, "long_max_len": 11}, "12, 11"),
])
def test_copy_task_length_ranges(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        CopyTaskConfig(**kwargs)


@pytest.mark.parametrize(("d_model", "n_heads"), [(30, 4), (64, 3), (10, 20)])
def test_d_model_must_be_divisible_by_n_heads(d_model: int, n_heads: int) -> None:
    expected = f"model.d_model={d_model} is not divisible by model.n_heads={n_heads}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        ModelConfig(d_model=d_model, n_heads=n_heads)


def test_unknown_section_keys_name_the_key_and_the_valid_ones() -> None:
    copy = get_task("copy")
    with pytest.raises(ValueError, match=re.escape("unknown key(s) ['d_modle'] in copy.model; valid keys: "
                                                   "d_ff, d_model, dropout, n_heads, n_layers")):
        copy.config({"model": {"d_modle": 64}})
    with pytest.raises(ValueError, match=re.escape("unknown key(s) ['contxt', 'n_digit'] in copy.data")):
        copy.config({"data": {"contxt": 20, "n_digit": 10}})
    with pytest.raises(ValueError, match=re.escape("unknown key(s) ['trian'] in copy; valid keys: data, eval, "
                                                   "model, positional, train")):
        copy.config({"trian": {}})


def test_unknown_positional_scheme_in_params_file(tmp_path: Path) -> None:
    raw = smoke_raw()
    raw["positional"]["rotary"] = {"base": 10.0}
    path = tmp_path / "params.yaml"
    path.write_text(__import__("yaml").safe_dump(raw))
    with pytest.raises(ValueError, match=re.escape("unknown scheme(s) ['rotary'] in positional; valid choices: ")):
        load_params(path)


def test_known_keys_round_trip() -> None:
    cfg = get_task("copy").config({"data": {"context": 30, "max_len": 14}, "model": {"d_model": 48, "n_heads": 6}})
    assert (cfg.data.context, cfg.data.max_len, cfg.model.d_model, cfg.model.n_heads) == (30, 14, 48, 6)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def test_cli_unknown_scheme_is_one_line_and_leaves_no_output(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main, ["run", "--task", "copy", "--scheme", "nope", "--out", str(out), "--params", str(REPO / "params.yaml")]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"error: Invalid value for '--scheme': unknown positional scheme 'nope'; "
                             f"valid choices: {valid_choices()}\n")
    assert result.stdout == ""
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--task", "cp", f"error: Invalid value for '--task': unknown task 'cp'; valid choices: "
                     f"{', '.join(task_names())}\n"),
    ("--device", "gpu", "error: Invalid value for '--device': unknown device 'gpu'; valid choices: auto, cpu, cuda, "
                        "cuda:N\n"),
])
def test_cli_run_choices_are_one_line(tmp_path: Path, option: str, value: str, expected: str) -> None:
    args = {"--task": "copy", "--scheme": "rope", "--device": "cpu", option: value}
    result = CliRunner().invoke(main, ["run", *[x for kv in args.items() for x in kv], "--out", str(tmp_path / "o")])
    assert (result.exit_code, result.stderr, result.stdout) == (2, expected, "")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("overrides", "expected"), [
    (["pe=rotary"], "error: bad override in ['pe=rotary']: In 'config': Could not find 'pe/rotary'; valid choices: "
                    "alibi, alibi_offset, alibi_sym, all, command_a, cope, fire, fox, gemma3, gemma4, gpt_oss, kerple, "
                    "learned, llama4, none, pope, references, rope, sandwich, sinusoidal, smollm3, stick_breaking, swan, t5"),
    (["copy.train.stepz=3"], "error: bad override in ['copy.train.stepz=3']: Could not override 'copy.train.stepz'."),
    (["++copy.positional.t5.buckets=8"], "error: unknown option(s) ['buckets'] in copy.positional.t5; valid options: "
                                         "max_distance, num_buckets"),
])
def test_bad_hydra_input_is_one_line_and_nonzero(overrides: list[str], expected: str) -> None:
    result = CliRunner().invoke(main, ["compose", "--conf", str(REPO / "conf"), *overrides])
    assert result.exit_code == 2
    assert result.stderr == expected + "\n"
    assert result.stdout == ""


@pytest.mark.parametrize("task, scheme", [("copy", "alibi"), ("reverse", "rand_rope"), ("lm", "rope")])
def test_cli_run_trains_and_evaluates_one_run_of_a_task_of_every_study(tmp_path: Path, task: str, scheme: str) -> None:
    """`pelab run` puts the task and scheme in the lists of the task's own study (a length task's scheme in the length
    study's schemes, the LM's in the LM study's), whatever params list for the other studies and their tuning."""
    import yaml

    from pelab.studies import STUDIES, study_of
    from pelab.tasks import TASKS

    assert {study_of(TASKS[t].__module__).name for t in ("copy", "reverse", "lm")} == {s.name for s in STUDIES}
    params = tmp_path / "params.yaml"
    raw = smoke_raw()
    raw["tune"] = {**raw.get("tune", {}), "tasks": ["copy"]}  # tuning another task is not this run's business
    params.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(main, ["run", "--task", task, "--scheme", scheme, "--seed", "2", "--device", "cpu",
                                       "--steps", "4", "--params", str(params), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith(f"{task} {scheme} seed 2 ") for line in lines), lines
    assert (tmp_path / "out/run/model.pt").exists() and (tmp_path / "out/results/records.jsonl").exists()
    assert io.read_json(tmp_path / "out/run/run.json")["scheme"] == scheme


def test_cli_summary_prints_the_headline_table_or_one_line(tmp_path: Path) -> None:
    import pandas as pd

    from pelab import io
    from pelab.aggregate import summary_table

    rows = [{"task": "copy", "pe": s, "seed": k, "split": "test", "length": "all", "metric": "exact_match",
             "value": v + 0.01 * k} for s, v in (("rope", 0.9), ("none", 0.1)) for k in range(3)]
    io.write_json(tmp_path / "summary.json", summary_table(pd.DataFrame(rows)))
    result = CliRunner().invoke(main, ["summary", "--summary", str(tmp_path / "summary.json")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "copy (mean ± sd over 3 seeds)" and "test exact_match" in lines[1]
    assert lines[2].split()[:4] == ["none", "0.110", "±", "0.010"]
    assert lines[3].split()[:4] == ["rope", "0.910", "±", "0.010"]
    missing = CliRunner().invoke(main, ["summary", "--summary", str(tmp_path / "nothing.json")])
    assert missing.exit_code == 2 and missing.stderr.startswith("error: no summary at")


def test_cli_summary_fits_120_columns_with_many_metrics(tmp_path: Path) -> None:
    import pandas as pd

    from pelab import io
    from pelab.aggregate import summary_table

    metrics = ["bleu_beam", "bleu_greedy", "chrf_beam", "chrf_greedy"]  # the headline: 8 columns, 2 splits
    rows = [{"task": "translation", "pe": s, "seed": k, "split": split, "length": "all", "metric": m, "value": 20.0 + k}
            for s in ("alibi_offset", "rope") for k in range(3) for split in ("test_2016_flickr", "test_2017_flickr")
            for m in metrics]
    io.write_json(tmp_path / "summary.json", summary_table(pd.DataFrame(rows)))
    result = CliRunner().invoke(main, ["summary", "--summary", str(tmp_path / "summary.json")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 120, max(map(len, lines))
    for split in ("test_2016_flickr", "test_2017_flickr"):
        for m in metrics:
            assert f"{split} {m}" in result.stdout
