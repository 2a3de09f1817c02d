"""The evaluation-time attention temperature (``pelab.positional.temperature``) for every scheme, and the LM's
crop-to-L baseline."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from pelab.model.attention import combine_attention_bias
from pelab.model.config import ModelConfig
from pelab.model.sequence import build_sequence_model
from pelab.positional import scheme_names, scheme_options
from pelab.positional.randomized import RandomizedPositions
from pelab.positional.temperature import TEMPERATURE, log_length_scale, tempered

CFG = ModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32)


def test_the_scale_is_one_within_the_trained_rows_and_log_length_beyond():
    assert log_length_scale(10, 64) == log_length_scale(64, 64) == 1.0
    assert log_length_scale(256, 64) == pytest.approx(math.log(256) / math.log(64))
    assert TEMPERATURE.identity_within and TEMPERATURE.suffix == "_logn"


@pytest.mark.parametrize("causal", [True, False])
# mamba has no attention to temper, and evaluation reads it without the temperature (tests/test_ssm.py)
@pytest.mark.parametrize("scheme", sorted(set(scheme_names()) - {"mamba"}))
def test_tempered_attention_is_the_trained_softmax_at_the_power_s_and_one_changes_nothing(scheme, causal):
    """softmax(s·z) = softmax(z)^s / Σ softmax(z)^s: the first layer's weights of the tempered model (whose input is
    the same) are the trained model's raised to s and renormalised, content and bias alike; s = 1 is the model."""
    if scheme == "xpos" and not causal:
        pytest.skip("xPos is causal only")
    if scheme == "stick_breaking":
        pytest.skip("no softmax: test_tempered_stick_breaking_breaks_its_stick_over_the_scaled_logits")
    options = scheme_options(scheme, {"threshold": 3.0} if scheme == "fire" else None)
    model = build_sequence_model(scheme, 11, CFG, options, seed=1, causal=causal).eval()
    with torch.no_grad():  # CoPE's position tables start at zero (NoPE): give its position logits something to scale
        for i, module in enumerate(m for m in model.modules() if isinstance(getattr(m, "table", None), nn.Parameter)):
            module.table.normal_(generator=torch.Generator().manual_seed(i))
    tokens = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(0))
    positions = (model.pe.sample_positions(9, "cpu", draw=1) if isinstance(model.pe, RandomizedPositions)
                 else torch.arange(9))
    with torch.no_grad():
        logits, _ = model(tokens, positions=positions)
        _, weights = model(tokens, positions=positions, need_weights=True)
        same, _ = model.with_positional(tempered(model.pe, 1.0))(tokens, positions=positions)
        hot = model.with_positional(tempered(model.pe, 1.7))
        _, hot_weights = hot(tokens, positions=positions, need_weights=True)
    torch.testing.assert_close(same, logits, atol=0, rtol=0)
    # over the real keys: a sink's logit (``model.switches``) is a learned constant the temperature leaves alone, so
    # with one the real keys' weights sum to less than 1 and keep their proportions at the power s
    expected, hot_self = weights[0]["self"] ** 1.7, hot_weights[0]["self"]
    torch.testing.assert_close(hot_self / hot_self.sum(-1, keepdim=True), expected / expected.sum(-1, keepdim=True),
                               atol=1e-5, rtol=1e-4)
    assert isinstance(hot.pe, type(model.pe)) and hot.pe.temperature == 1.7
    assert "temperature" not in model.pe.__dict__  # the trained module is unchanged


@pytest.mark.parametrize("causal", [True, False])
def test_tempered_stick_breaking_breaks_its_stick_over_the_scaled_logits(causal):
    model = build_sequence_model("stick_breaking", 11, CFG, None, seed=1, causal=causal).eval()
    tokens = torch.randint(0, 11, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        _, hot_weights = model.with_positional(tempered(model.pe, 1.7))(tokens, need_weights=True)
        layer = model.encoder.layers[0]
        h = layer.attn_norm(model.embedding(tokens))
        q, k, _ = layer.attn.project(h, h)
        scores = q @ k.transpose(-2, -1) / math.sqrt(CFG.d_model // CFG.n_heads)
        if causal:
            scores = scores + combine_attention_bias(None, q_len=9, k_len=9, causal=True)
    torch.testing.assert_close(hot_weights[0]["self"], model.pe.attention_weights(1.7 * scores), atol=1e-6, rtol=1e-5)


def test_a_tempered_randomized_scheme_draws_the_positions_of_its_scheme():
    model = build_sequence_model("rand_rope", 11, CFG, scheme_options("rand_rope"), seed=1, causal=True).eval()
    hot = model.with_positional(tempered(model.pe, 2.0))
    assert isinstance(hot.pe, RandomizedPositions)
    assert torch.equal(hot.positions(12, "cpu"), model.positions(12, "cpu"))  # the fixed evaluation draw


def test_without_a_positional_bias_the_temperature_is_queries_scaled_by_s():
    """NoPE: scaling the logits by s is scaling every layer's query projection by s."""
    model = build_sequence_model("none", 11, CFG, scheme_options("none"), seed=1, causal=True).eval()
    scaled = build_sequence_model("none", 11, CFG, scheme_options("none"), seed=1, causal=True).eval()
    with torch.no_grad():
        for layer in scaled.encoder.layers:
            layer.attn.q_proj.weight.mul_(1.3)
            layer.attn.q_proj.bias.mul_(1.3)
        tokens = torch.randint(0, 11, (2, 10), generator=torch.Generator().manual_seed(3))
        torch.testing.assert_close(model.with_positional(tempered(model.pe, 1.3))(tokens)[0], scaled(tokens)[0],
                                   atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("layers", [1, 3, 5, 7])
@pytest.mark.parametrize("scheme", sorted(scheme_names()))
def test_a_causal_model_read_for_its_last_position_alone_gives_the_whole_rows_last_logits(scheme, layers):
    """``last_logits`` runs a causal stack's last layer for one query (``Encoder.last``): the same logits as the whole
    row's last, for every scheme (content biases, stick-breaking, switches; a layout's last layer global at 1 and 3
    layers, local at 5 (a period of 4: command_a, llama4, smollm3) or 7 (gemma3's period of 6), with rows longer than
    its window), with every parameter drawn away from its initialisation (CoPE's tables and FoX's gates start at zero;
    each layer's its own draw), and for RoPE's evaluation-time variants and the temperature beyond the trained length."""
    from pelab.positional import SCHEMES
    from pelab.positional.variants import evaluation_variants

    cfg = ModelConfig(d_model=16, n_layers=layers, n_heads=2, d_ff=32)
    model = build_sequence_model(scheme, 13, cfg, scheme_options(scheme), seed=2, causal=True).eval()
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * 0.3)
    windows = [s.defaults.get("layer", {}).get("window", 0) for s in SCHEMES.values()]
    length = max(windows) + 4  # rows longer than every layout's local window
    tokens = torch.randint(0, 13, (3, length), generator=torch.Generator().manual_seed(5))
    variants = [model] + [model.with_positional(v.module(model.pe, length, 4, length)) for v in
                          (*evaluation_variants(model.pe), TEMPERATURE)]
    for read in variants:
        with torch.no_grad():
            whole, _ = read(tokens)  # (3, T, 13)
            last = read.last_logits(tokens)  # (3, 13)
        torch.testing.assert_close(last, whole[:, -1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("scheme", ["sinusoidal", "rope", "alibi", "fox", "cope", "stick_breaking"])
def test_the_crop_baseline_reads_every_scored_token_from_exactly_the_l_tokens_before_it(scheme):
    from pelab.tasks.lm.evaluate import cropped_nll, perplexity

    model = build_sequence_model(scheme, 13, CFG, scheme_options(scheme), seed=2, causal=True).eval()
    generator = torch.Generator().manual_seed(4)
    docs = [torch.randint(0, 13, (2 * 12 + 1,), generator=generator) for _ in range(2)]  # N = 12 targets each
    window = 5
    nll, count, _ = perplexity(model, docs, window, 1, 7, torch.device("cpu"))
    losses = []
    with torch.no_grad():
        for doc in docs:
            for target in range(13, 25):  # the targets after the first N = 12 tokens, each from its last L tokens
                logits, _ = model(doc[target - window:target][None])
                losses.append(float(torch.nn.functional.cross_entropy(logits[0, -1], doc[target])))
    assert count == len(losses) == 24 and nll == pytest.approx(sum(losses) / len(losses), rel=1e-5)
    read = torch.cat(cropped_nll(model, docs, window, 7, torch.device("cpu")))  # (24,) in the targets' order
    assert read.tolist() == pytest.approx(losses, rel=1e-5) and float(read.mean()) == pytest.approx(nll, rel=1e-5)


@pytest.mark.parametrize("targets", [None, 1, 3, 4, 12])
def test_perplexity_over_the_first_targets_scores_each_as_the_sliding_window_reads_it(targets):
    """``perplexity(…, targets=k)``: the first k targets of each speech, each read as the last S of a window of L (the
    sliding protocol's block), the rest of a block left unscored; None scores all N."""
    from pelab.tasks.lm.evaluate import perplexity

    model = build_sequence_model("rope", 13, CFG, scheme_options("rope"), seed=2, causal=True).eval()
    generator = torch.Generator().manual_seed(4)
    docs = [torch.randint(0, 13, (2 * 12 + 1,), generator=generator) for _ in range(2)]  # N = 12 targets each
    window, stride = 6, 4
    losses = []
    with torch.no_grad():
        for doc in docs:
            for i in range(12 if targets is None else targets):  # target 13 + i, in block i // S at place i % S
                start = 12 + (i // stride) * stride - (window - stride)
                logits, _ = model(doc[start:start + window][None])
                place = window - stride + i % stride
                losses.append(float(torch.nn.functional.cross_entropy(logits[0, place], doc[start + place + 1])))
    nll, count, _ = perplexity(model, docs, window, stride, 5, torch.device("cpu"), targets)
    assert count == len(losses) and nll == pytest.approx(sum(losses) / len(losses), rel=1e-5)


def test_the_crop_control_is_the_better_of_its_two_reads_and_never_worse_than_the_run_at_l():
    """``crop``: the last-position read and the sliding read at L, each recorded, the control the lower of the two at
    every T; with every target scored, its sliding read is the run's own sliding perplexity at L."""
    from types import SimpleNamespace

    from pelab.tasks.lm.evaluate import crop, cropped_nll, perplexity

    model = build_sequence_model("rope", 13, CFG, scheme_options("rope"), seed=2, causal=True).eval()
    generator = torch.Generator().manual_seed(4)
    docs = [torch.randint(0, 13, (2 * 16 + 1,), generator=generator) for _ in range(3)]  # N = 16 targets each
    cfg = SimpleNamespace(data=SimpleNamespace(context=8),
                          eval=SimpleNamespace(crop_targets=None, batch_size=4, sliding_stride=0.5))
    rows = crop(model, cfg, SimpleNamespace(test=docs), torch.device("cpu"), [8, 16])
    value = {(r["split"], r["length"], r["metric"]): r["value"] for r in rows}
    last = math.exp(float(torch.cat(cropped_nll(model, docs, 8, 4, torch.device("cpu"))).mean()))
    sliding = math.exp(perplexity(model, docs, 8, 4, 4, torch.device("cpu"))[0])
    assert value["at_L_crop", "all", "ppl_last"] == pytest.approx(last, rel=1e-6)
    assert value["at_L_crop", "all", "ppl_sliding_read"] == pytest.approx(sliding, rel=1e-6)
    for protocol in ("window_crop", "sliding_crop"):
        for length in (8, 16):
            assert value[protocol, length, "ppl"] == pytest.approx(min(last, sliding), rel=1e-6)
            assert value[protocol, length, "ppl"] <= sliding * (1 + 1e-9)
            assert value[protocol, length, "tokens"] == 3 * 16
