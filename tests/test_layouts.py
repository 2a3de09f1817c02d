"""Layouts as data (positional/layout.py): options merge over the preset's, bad input is one line, the stack refuses a
layout built for another depth, spans bound what a position can read, and the evaluation-time temperature reaches
every layer type."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from pelab.model.blocks import Encoder
from pelab.model.config import ModelConfig
from pelab.model.sequence import SequenceTransformer
from pelab.positional import build_positional_encoding, scheme_options
from pelab.positional.temperature import tempered


def test_params_merge_over_the_preset_key_by_key() -> None:
    pe = build_positional_encoding("command_a", d_model=32, n_heads=2, causal=True, n_layers=4,
                                   options={"layer": {"window": 8}, "nth_layer": {"scheme": "rope", "base": 500.0}})
    local, nth = pe.layer(0).spec, pe.layer(3).spec
    assert (local.scheme, local.span, local.window) == ("rope", "sliding", 8)
    assert (nth.scheme, nth.span, pe.layer(3).inner.base) == ("rope", "full", 500.0)
    assert pe.layer_biases(torch.arange(5), torch.arange(5))[3] is None  # full span, RoPE: no bias
    with pytest.raises(TypeError, match="per layer"):
        pe.rotate(torch.ones(1, 2, 5, 16), torch.ones(1, 2, 5, 16), torch.arange(5), torch.arange(5))


@pytest.mark.parametrize(("options", "message"), [
    ({"layer": {"bass": 5.0}}, r"^unknown option\(s\) \['bass'\] in positional.command_a.layer; valid options: base, "),
    ({"layer": {"span": "local"}}, r"^positional.command_a.layer.span='local'; valid choices: full, sliding, chunked$"),
    ({"nth_layer": {"scheme": "sinusoidal"}}, r"^positional.command_a.nth_layer.scheme='sinusoidal'; valid choices: "
                                              r"rope, yarn, none$"),
    ({"nth_layer": {"scheme": "rotary"}}, r"^positional.command_a.nth_layer.scheme='rotary'; valid choices: rope, "
                                          r"yarn, none$"),
    ({"layer": {"window": 0}}, r"^positional.command_a.layer.window=0: a sliding span needs a window of >= 1 token$"),
    ({"period": 0}, r"^positional.command_a.period must be an integer >= 1, got 0$"),
    ({"layer": "rope"}, r"^positional.command_a.layer must be a mapping"),
    ({"nth_layer": {"log_base": 1.0}}, r"^positional.command_a.nth_layer.log_base must be 0 \(off\) or > 1 \(the base "
                                       r"a of log_a\(a \+ p\)\), got 1.0$"),
])
def test_bad_layout_options_fail_in_one_line_before_anything_is_built(options, message) -> None:
    with pytest.raises(ValueError, match=message) as error:
        scheme_options("command_a", options)
    assert "\n" not in str(error.value)


def test_a_layout_is_built_for_its_stack_depth() -> None:
    pe = build_positional_encoding("smollm3", d_model=32, n_heads=2, n_layers=2)
    with pytest.raises(ValueError, match="built for 2 layers, the stack has 4"):
        Encoder(pe, n_layers=4, d_ff=32, dropout=0.0)


def model(scheme: str, options: dict | None = None) -> SequenceTransformer:
    from pelab.tasks.lm.model import build_lm

    return build_lm(scheme, 11, ModelConfig(d_model=32, n_layers=2, n_heads=2, d_ff=32, dropout=0.0), options,
                    seed=0).eval()


def test_a_sliding_window_bounds_what_the_last_position_reads() -> None:
    """Both layers sliding with w = 4: the last of 20 positions reads at most 2·(4 − 1) positions back, so a token
    further back changes nothing there, and one inside the reach does."""
    lm = model("command_a", {"nth_layer": {"span": "sliding", "window": 4}, "layer": {"window": 4}})
    tokens = torch.randint(0, 11, (1, 20), generator=torch.Generator().manual_seed(0))
    far, near = tokens.clone(), tokens.clone()
    far[0, 20 - 1 - 7] = (far[0, 12] + 1) % 11
    near[0, 20 - 1 - 6] = (near[0, 13] + 1) % 11
    with torch.no_grad():
        base, outside, inside = (lm(x)[0][0, -1] for x in (tokens, far, near))
    assert_close(outside, base, rtol=0, atol=1e-6)
    assert (inside - base).abs().max() > 1e-4


def test_incremental_decoding_equals_the_whole_row_under_every_span() -> None:
    for scheme in ("command_a", "llama4", "gemma4", "swan"):
        lm = model(scheme, {"layer": {"window": 3}})
        tokens = torch.randint(0, 11, (2, 12), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            whole = lm.encoder(lm.embedding(tokens), torch.arange(12))[0]
            caches = [{} for _ in lm.encoder.layers]
            first = lm.encoder.extend(lm.embedding(tokens[:, :5]), caches, torch.arange(5))
            rest = [lm.encoder.extend(lm.embedding(tokens[:, t:t + 1]), caches, torch.arange(t + 1))
                    for t in range(5, 12)]
        assert_close(torch.cat([first, *rest], dim=1), whole, rtol=1e-5, atol=1e-5, msg=scheme)


def test_the_temperature_scales_every_layer_type_once_and_keeps_the_masks() -> None:
    pe = build_positional_encoding("command_a", d_model=32, n_heads=2, causal=True, n_layers=2)
    hot = tempered(pe, 1.5)
    positions = torch.arange(20)
    q = torch.randn(1, 2, 20, 16)
    for i in range(2):
        cold_q, _ = pe.layer(i).rotate(q, q, positions, positions)
        hot_q, _ = hot.layer(i).rotate(q, q, positions, positions)
        assert_close(hot_q, 1.5 * cold_q)
    cold_bias, hot_bias = pe.layer_biases(positions, positions), hot.layer_biases(positions, positions)
    assert torch.equal(torch.isinf(hot_bias[0]), torch.isinf(cold_bias[0])) and hot_bias[1] is None


def test_the_layout_reading_pairs_seeds_against_the_schemes_its_layers_use() -> None:
    import pandas as pd

    from pelab.report.layouts import layout_reading

    class Cfg:  # what the reading reads of a task's config: the model's shape and the scheme's options
        model = ModelConfig(d_model=32, n_layers=2, n_heads=2, d_ff=32, dropout=0.0)

        def options(self, scheme):
            return scheme_options(scheme)

    values = {"command_a": [0.5, 0.6, 0.4], "rope": [0.3, 0.7, 0.2], "none": [0.1, 0.1, 0.1], "alibi": [0.9] * 3}
    records = pd.DataFrame([{"task": "recall_causal", "pe": pe, "seed": seed, "split": "beyond",
                             "metric": "token_accuracy", "length": "all", "value": v}
                            for pe, vs in values.items() for seed, v in enumerate(vs)])
    text = layout_reading(records, Cfg(), "recall_causal", list(values), "beyond", "token_accuracy",
                          "token accuracy beyond N", False, causal=True)
    assert text == ("**Layouts on recall_causal.** `command_a` (layer 1: rope, sliding 16; layer 2: none, full): token "
                    "accuracy beyond N 0.500 against `rope`'s 0.400 (higher on 2 of 3 seeds) and `none`'s 0.100 "
                    "(higher on 3 of 3 seeds).")
    assert layout_reading(records, Cfg(), "recall_causal", ["rope", "alibi"], "beyond", "token_accuracy", "x", False,
                          causal=True) == ""


def test_the_setup_sentence_describes_the_stack_at_the_tasks_depth() -> None:
    from pelab.analysis.schemes import describe_scheme
    from pelab.positional import Usage

    usage = Usage("the LM study", 64, 512, range(1, 64))
    two = describe_scheme("command_a", usage, d_model=32, n_heads=2, causal=True, n_layers=2)
    assert two.startswith("Per layer at this depth, layer 1: rope, sliding 16; layer 2: none, full, local spans of "
                          "16 tokens against rows of 64 in training and 512 in evaluation (the pattern of Command A")
    one = describe_scheme("command_a", usage, d_model=32, n_heads=2, causal=True, n_layers=1)
    assert "layer 1: none, full (the pattern" in one and "local spans" not in one


@pytest.mark.parametrize(("n_layers", "order"), [(1, [1]), (2, [1, 0]), (4, [1, 0, 0, 0]), (8, [1, 0, 0, 0] * 2)])
def test_swan_starts_every_four_layers_with_a_global_nope_layer(n_layers, order) -> None:
    """SWAN's "global_start" (arXiv 2504.08719, Appendix A): NoPE with full attention, then three RoPE layers
    (θ = 10⁶, Table 6) in a sliding window; at one layer the global layer alone."""
    pe = build_positional_encoding("swan", d_model=32, n_heads=2, causal=True, n_layers=n_layers)
    assert pe.order == order
    nth, local = pe.types[1].spec, pe.types[0].spec
    assert (nth.scheme, nth.span, nth.log_base) == ("none", "full", 64.0)
    assert (local.scheme, local.span, local.window, local.log_base) == ("rope", "sliding", 16, 0.0)
    assert pe.types[0].inner.base == 1e6


def test_swans_scale_is_log_a_of_a_plus_p_in_evaluation_and_off_in_training() -> None:
    """Queries of the NoPE layer ×ln(a + p)/ln a (§2.2, Appendix D), computed here in float64: 1 at p = 0, above 1
    after; the keys and the RoPE layers untouched; in training the layer is plain NoPE."""
    a, length = 64.0, 300
    pe = build_positional_encoding("swan", d_model=32, n_heads=2, causal=True, n_layers=2,
                                   options={"nth_layer": {"log_base": a}})
    positions = torch.arange(length)
    q, k = torch.randn(2, 2, length, 16, dtype=torch.float64), torch.randn(2, 2, length, 16, dtype=torch.float64)
    scale = torch.tensor([math.log(a + p) / math.log(a) for p in range(length)], dtype=torch.float64)
    pe.eval()
    q_eval, k_eval = pe.layer(0).rotate(q, k, positions, positions)
    assert_close(q_eval, q * scale[:, None], rtol=1e-6, atol=0)
    assert torch.equal(k_eval, k) and torch.equal(q_eval[:, :, 0], q[:, :, 0])
    assert scale[1:].min() > 1 and scale[length - 1] == pytest.approx(math.log(a + 299) / math.log(a))
    pe.train()
    q_train, k_train = pe.layer(0).rotate(q, k, positions, positions)
    assert torch.equal(q_train, q) and torch.equal(k_train, k)
    local = build_positional_encoding("rope", d_model=32, n_heads=2, causal=True, options={"base": 1e6})
    for mode in (pe.eval, pe.train):
        mode()
        assert_close(pe.layer(1).rotate(q, k, positions, positions), local.rotate(q, k, positions, positions))


def test_swan_trains_as_its_unscaled_control_and_evaluates_apart_from_it() -> None:
    """The whole LM: in training mode SWAN equals its "no scale" control (log_base 0); in evaluation the scale
    changes its logits, by more at the end of a row than at its start."""
    scaled, control = model("swan"), model("swan", {"nth_layer": {"log_base": 0.0}})
    control.load_state_dict(scaled.state_dict())
    tokens = torch.randint(0, 11, (2, 40), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        evaluated = (scaled(tokens)[0] - control(tokens)[0]).abs()
        scaled.train(), control.train()
        assert torch.equal(scaled(tokens)[0], control(tokens)[0])
    assert evaluated[:, 0].max() < 1e-6 and evaluated[:, -1].max() > 1e-3
