"""Bad input fails early with a ValueError that names the bad value and what to use instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from pelab.cli import main
from pelab.config import CopyStudyConfig, CopyTaskConfig, ModelConfig, Params, PositionalConfig, load_params
from pelab.copy_study import build_and_check
from pelab.model.copy_model import build_copy_model
from pelab.positional import POSITIONAL_ENCODINGS, build_positional_encoding, check_scheme, scheme_names
from pelab.positional.learned import LearnedPositionalEncoding

REPO = Path(__file__).resolve().parents[1]


def valid_choices() -> str:
    return ", ".join(POSITIONAL_ENCODINGS)  # derived from the registry, never copied


# ---------------------------------------------------------------------------------------------
# Scheme names
# ---------------------------------------------------------------------------------------------


def test_scheme_names_are_the_registry_keys() -> None:
    assert scheme_names() == list(POSITIONAL_ENCODINGS)
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
        Params(profile="t", schemes=("rope", "nope"), seeds=(0,), positional=PositionalConfig(), raw={})


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
    pe = LearnedPositionalEncoding(d_model=8, n_heads=2, max_positions=16)
    pe.check_length(16)  # exactly fits
    with pytest.raises(ValueError, match=r"has 16 rows, cannot encode a sequence of length 17") as err:
        pe.check_length(17)
    assert "max_positions to at least 17" in str(err.value)


def test_learned_table_too_short_forward() -> None:
    model_cfg = ModelConfig(d_model=16, n_heads=2, d_ff=32)
    model = build_copy_model("learned", 12, model_cfg, PositionalConfig(max_positions=16), seed=0)
    logits, _ = model(torch.zeros(1, 16, dtype=torch.long))
    assert logits.shape == (1, 16, 12)
    with pytest.raises(ValueError, match=r"has 16 rows, cannot encode a sequence of length 20"):
        model(torch.zeros(1, 20, dtype=torch.long))
    with pytest.raises(ValueError, match=r"cannot encode a sequence of length 24"):
        model(torch.zeros(1, 4, dtype=torch.long), positions=torch.arange(20, 24))


def test_build_and_check_rejects_a_table_shorter_than_the_long_test() -> None:
    raw = {"copy": {"task": {"context": 20, "long_context": 40}, "model": {"d_model": 16, "n_heads": 2, "d_ff": 32}}}
    params = Params(
        profile="t", schemes=("learned",), seeds=(0,), positional=PositionalConfig(max_positions=30), raw=raw
    )
    with pytest.raises(ValueError, match=r"has 30 rows, cannot encode a sequence of length 40"):
        build_and_check(params, "learned", 0)
    # every other scheme has no length limit
    for name in scheme_names():
        if name != "learned":
            assert build_and_check(params, name, 0).pe.__class__ is POSITIONAL_ENCODINGS[name]


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
    with pytest.raises(ValueError, match=re.escape("unknown ModelConfig key(s) ['d_modle']")) as err:
        CopyStudyConfig.from_dict({"model": {"d_modle": 64}})
    assert "'d_model'" in str(err.value) and "'n_heads'" in str(err.value)
    with pytest.raises(ValueError, match=re.escape("unknown CopyTaskConfig key(s) ['contxt', 'n_digit']")):
        CopyStudyConfig.from_dict({"task": {"contxt": 20, "n_digit": 10}})
    expected = "unknown copy key(s) ['trian']; valid keys: ['model', 'task', 'train']"
    with pytest.raises(ValueError, match=re.escape(expected)):
        CopyStudyConfig.from_dict({"trian": {}})


def test_unknown_positional_key_in_params_file(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("pe:\n  schemes: [rope]\nseeds: [0]\npositional:\n  max_position: 64\n")
    with pytest.raises(ValueError, match=re.escape("unknown PositionalConfig key(s) ['max_position']")) as err:
        load_params(path)
    assert "'max_positions'" in str(err.value)


def test_known_keys_round_trip() -> None:
    cfg = CopyStudyConfig.from_dict({"task": {"context": 30, "max_len": 14}, "model": {"d_model": 48, "n_heads": 6}})
    assert (cfg.task.context, cfg.task.max_len, cfg.model.d_model, cfg.model.n_heads) == (30, 14, 48, 6)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def test_cli_unknown_scheme_is_one_line_and_leaves_no_output(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main, ["train-copy", "--scheme", "nope", "--out", str(out), "--params", str(REPO / "params.yaml")]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: unknown positional scheme 'nope'; valid choices: {valid_choices()}\n"
    assert result.stdout == ""
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
