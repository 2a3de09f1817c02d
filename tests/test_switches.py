"""The switches against attention dilution (``pelab.model.switches``): each against its formula or reference, each
composing with every registered scheme, and a switched model sharing every other initial weight with its scheme's."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from pelab.model.attention import MultiHeadAttention, combine_attention_bias
from pelab.model.config import ModelConfig
from pelab.model.sequence import build_sequence_model
from pelab.model.switches import Switches, install
from pelab.model.switches.ssmax import INIT as SSMAX_INIT
from pelab.positional import (SCHEMES, build_positional_encoding, describe, scheme_names, scheme_options, scheme_spec,
                              switched_from)
from pelab.positional.switched import SWITCHES, check_switches

MODEL = ModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32)
VOCAB = 11


def model_of(scheme: str, causal: bool, switches: tuple[str, ...] = (), seed: int = 0):
    options = scheme_options(scheme, {"max_position": 64} if scheme.startswith("rand_") else None)
    model = build_sequence_model(scheme, VOCAB, MODEL, options, seed, causal=causal)
    install(model, switches, seed)
    return model.eval()


def rows(batch: int = 3, length: int = 9) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(1))


def attention(switches: tuple[str, ...]) -> MultiHeadAttention:
    torch.manual_seed(0)
    attn = MultiHeadAttention(16, 2).eval()
    attn.switches = Switches(16, 2, switches)
    with torch.no_grad():
        for p in attn.switches.parameters():
            p.normal_(0.0, 1.0)
    return attn


def by_hand(attn: MultiHeadAttention, x: torch.Tensor, bias: torch.Tensor | None, scale: torch.Tensor | None = None,
            sink: torch.Tensor | None = None, gate: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention written out: logits (times SSMax's per-query scale), the gpt-oss sink as a last logit column that is
    dropped after the softmax (its ``sdpa``), the output gated per channel."""
    q, k, v = attn.project(x, x)
    logits = q @ k.transpose(-2, -1) / math.sqrt(attn.head_dim)  # (B, H, T, T)
    if scale is not None:
        logits = logits * scale
    if bias is not None:
        logits = logits + bias
    if sink is not None:
        column = sink[None, :, None, None].expand(*logits.shape[:-1], 1)
        weights = torch.cat([logits, column], -1).softmax(-1)[..., :-1]
    else:
        weights = logits.softmax(-1)
    out = weights @ v  # (B, H, T, Dh)
    if gate:
        out = out * torch.sigmoid(attn.switches.gate.proj(x)).unflatten(-1, (2, -1)).transpose(1, 2)
    return attn.out_proj(out.transpose(1, 2).flatten(2)), weights


def run(attn: MultiHeadAttention, x: torch.Tensor, bias: torch.Tensor | None):
    pe = build_positional_encoding("none", d_model=16, n_heads=2)
    positions = torch.arange(x.shape[1])
    return attn(x, x, pe=pe, q_pos=positions, k_pos=positions, attn_bias=bias, need_weights=True)


@pytest.mark.parametrize("causal", [False, True])
def test_ssmax_scales_each_query_s_logits_by_s_log_of_the_keys_it_sees(causal):
    """Nakanishi 2025, eq. 2: softmax((s log n) q kᵀ/√d); n = i + 1 for causal query i, the unpadded keys of a
    bidirectional row (its padding masked)."""
    attn = attention(("ssmax",))
    x = torch.randn(2, 6, 16)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])  # the second row: 4 keys
    bias = combine_attention_bias(None, q_len=6, k_len=6, causal=causal, key_padding_mask=None if causal else padding)
    n = (torch.arange(1, 7.0)[None, None, :, None] if causal
         else torch.tensor([6.0, 4.0])[:, None, None, None].expand(2, 1, 6, 1))
    s = attn.switches.ssmax.s
    out, weights = run(attn, x, bias)
    expected, expected_weights = by_hand(attn, x, bias, scale=s[None, :, None, None] * n.log())
    assert_close(out, expected)
    assert_close(weights, expected_weights)


def test_ssmax_at_s_log_n_one_is_plain_attention_and_starts_at_the_paper_s_s():
    attn = attention(("ssmax",))
    assert torch.equal(Switches(16, 2, ("ssmax",)).ssmax.s, torch.full((2,), SSMAX_INIT))
    x = torch.randn(2, 7, 16)
    with torch.no_grad():
        attn.switches.ssmax.s.fill_(1 / math.log(7))  # every query of a bidirectional row sees 7 keys
    plain = attention(())
    assert_close(run(attn, x, None)[0], run(plain, x, None)[0])


@pytest.mark.parametrize("causal", [False, True])
def test_the_sink_is_gpt_oss_s_extra_logit_and_its_weights_leave_the_rest(causal):
    attn = attention(("sink",))
    x = torch.randn(2, 5, 16)
    bias = combine_attention_bias(None, q_len=5, k_len=5, causal=causal)
    out, weights = run(attn, x, bias)
    expected, expected_weights = by_hand(attn, x, bias, sink=attn.switches.sink.logit)
    assert_close(out, expected)
    assert_close(weights, expected_weights)
    assert weights.shape == (2, 2, 5, 5) and bool((weights.sum(-1) < 1).all())
    with torch.no_grad():
        attn.switches.sink.logit.fill_(-1e4)  # a sink nothing reaches: plain attention
    assert_close(run(attn, x, bias)[0], run(attention(()), x, bias)[0])


def test_the_gate_multiplies_each_head_s_channels_by_a_sigmoid_of_the_query_s_input():
    attn = attention(("gate",))
    x = torch.randn(2, 5, 16)
    assert_close(run(attn, x, None)[0], by_hand(attn, x, None, gate=True)[0])
    with torch.no_grad():  # a gate always open: plain attention
        attn.switches.gate.proj.weight.zero_()
        attn.switches.gate.proj.bias.fill_(1e4)
    assert_close(run(attn, x, None)[0], run(attention(()), x, None)[0])


def test_qk_norm_is_torch_s_rms_norm_of_each_head_before_the_positions_and_ignores_the_projection_s_scale():
    """Per head as HF's Qwen3 (``q_norm = Qwen3RMSNorm(head_dim)`` on the projected heads, before RoPE), checked
    against torch's own ``F.rms_norm`` (ε = 10⁻⁶, the learned gain per channel); the attention then reads those heads.
    RMS normalisation makes the output blind to the scale of the query and key projections, and bounds each logit by
    max|g_q|·max|g_k|·√Dh."""
    attn = attention(("qk_norm",))
    x = torch.randn(2, 7, 16)
    norm = attn.switches.qk_norm
    q, k, v = attn.project(x, x)
    heads = attn.split_heads
    assert_close(q, torch.nn.functional.rms_norm(heads(attn.q_proj(x)), (8,), norm.q_gain, eps=1e-6))
    assert_close(k, torch.nn.functional.rms_norm(heads(attn.k_proj(x)), (8,), norm.k_gain, eps=1e-6))
    assert_close(run(attn, x, None)[0], by_hand(attn, x, None)[0])
    rope = build_positional_encoding("rope", d_model=16, n_heads=2)  # normed first, then rotated
    positions = torch.arange(7)
    rotated = rope.rotate(q, k, positions, positions)
    with torch.no_grad():
        out = attn(x, x, pe=rope, q_pos=positions, k_pos=positions, attn_bias=None)[0]
        expected = attn.out_proj(((rotated[0] @ rotated[1].transpose(-2, -1) / math.sqrt(8)).softmax(-1) @ v)
                                 .transpose(1, 2).flatten(2))
    assert_close(out, expected)
    with torch.no_grad():
        for proj in (attn.q_proj, attn.k_proj):
            proj.weight.mul_(10.0)
            proj.bias.mul_(10.0)
    assert_close(run(attn, x, None)[0], by_hand(attn, x, None)[0])
    logits = (q @ k.transpose(-2, -1)) / math.sqrt(8)
    bound = float(norm.q_gain.abs().max() * norm.k_gain.abs().max()) * math.sqrt(8)  # |q|, |k| <= max|g|·√Dh
    assert float(logits.abs().max()) <= bound + 1e-5


def test_qk_norm_makes_attention_blind_to_the_scale_of_queries_and_keys():
    x = torch.randn(2, 7, 16)
    plain, scaled = attention(("qk_norm",)), attention(("qk_norm",))
    with torch.no_grad():
        for proj in (scaled.q_proj, scaled.k_proj):
            proj.weight.mul_(7.0)
            proj.bias.mul_(7.0)
    assert_close(run(scaled, x, None)[0], run(plain, x, None)[0], atol=1e-5, rtol=1e-5)
    unnormed = attention(())
    with torch.no_grad():
        for proj in (unnormed.q_proj, unnormed.k_proj):
            proj.weight.mul_(7.0)
    assert not torch.allclose(run(unnormed, x, None)[0], run(attention(()), x, None)[0], atol=1e-3)


def test_all_three_together_are_each_in_turn():
    attn = attention(("ssmax", "sink", "gate"))
    x = torch.randn(2, 6, 16)
    bias = combine_attention_bias(None, q_len=6, k_len=6, causal=True)
    n = torch.arange(1, 7.0)[None, None, :, None]
    expected, _ = by_hand(attn, x, bias, scale=attn.switches.ssmax.s[None, :, None, None] * n.log(),
                          sink=attn.switches.sink.logit, gate=True)
    assert_close(run(attn, x, bias)[0], expected)


@pytest.mark.parametrize("switch", list(SWITCHES))
# mamba has no attention to switch: tests/test_ssm.py checks the one-line refusal
@pytest.mark.parametrize("scheme", [s for s in scheme_names() if not SCHEMES[s].switches and s != "mamba"])
def test_every_switch_composes_with_every_scheme(scheme, switch):
    """Causal: the whole row equals incremental decoding (the cache path every evaluation of the LM takes); both
    forms run, finite; every weight but the switch's is the unswitched model's."""
    x = rows()
    forms = (True,) if scheme == "xpos" else (False, True)
    for causal in forms:
        plain, switched = model_of(scheme, causal), model_of(scheme, causal, (switch,))
        own = {n for n, _ in switched.named_parameters() if ".switches." in n}
        assert own and {n for n, _ in plain.named_parameters()} == {n for n, _ in switched.named_parameters()} - own
        for name, p in plain.named_parameters():
            assert torch.equal(p, dict(switched.named_parameters())[name]), name
        positions = switched.positions(x.shape[1], "cpu")
        with torch.no_grad():
            whole, attentions = switched(x, positions, need_weights=True)
            assert torch.isfinite(whole).all() and attentions[0]["self"].shape == (3, 2, 9, 9)
            if causal:
                caches = switched.new_caches()
                parts = [switched.extend(x[:, :4], caches, positions[:4])]
                parts += [switched.extend(x[:, t:t + 1], caches, positions[:t + 1]) for t in range(4, 9)]
                assert_close(torch.cat(parts, 1), whole, atol=2e-5, rtol=1e-5)


def test_the_registered_switched_schemes_are_rope_with_one_switch_each():
    for name, switch in (("rope_ssmax", "ssmax"), ("rope_sink", "sink"), ("rope_gate", "gate")):
        spec = SCHEMES[name]
        assert spec.switches == (switch,) and spec.cls is SCHEMES["rope"].cls and switched_from(name) == "rope"
        # a spec keeps its scheme's evaluation-time variants: RoPE's extensions read the switched model too
        assert build_positional_encoding(name, d_model=16, n_heads=2, causal=True).variants == "rope_extensions"
        model = model_of(name, True)
        assert all(layer.attn.switches.names == (switch,) for layer in model.encoder.layers)
        plain = model_of("rope", True)
        same = {n: p for n, p in model.named_parameters() if ".switches." not in n}
        assert all(torch.equal(p, dict(plain.named_parameters())[n]) for n, p in same.items())
        pe = build_positional_encoding(name, d_model=16, n_heads=2, causal=True)
        assert pe.switches == (switch,) and pe.name == name
        assert SWITCHES[switch].split(",")[0] in describe(pe, None)  # the report names the switch and its source


def test_a_scheme_plus_a_switch_is_the_switch_as_an_axis_beside_any_scheme():
    """``rope+ssmax`` is the spec ``rope_ssmax`` bit for bit; ``alibi+sink+gate`` ALiBi with two switches, its other
    weights ALiBi's; a name with an unknown switch or base fails in one line naming the valid choices."""
    assert scheme_spec("rope+ssmax").training_record() == scheme_spec("rope_ssmax").training_record()
    x = rows()
    for causal in (False, True):
        axis, spec = model_of("rope+ssmax", causal), model_of("rope_ssmax", causal)
        assert all(torch.equal(p, q) for p, q in zip(axis.state_dict().values(), spec.state_dict().values()))
        positions = axis.positions(x.shape[1], "cpu")
        with torch.no_grad():
            assert torch.equal(axis(x, positions)[0], spec(x, positions)[0])
    both = scheme_spec("alibi+sink+gate")
    assert both.switches == ("gate", "sink") and both.cls is SCHEMES["alibi"].cls
    assert switched_from(both.name) == "alibi"
    model, plain = model_of("alibi+sink+gate", True), model_of("alibi", True)
    assert all(torch.equal(p, dict(plain.named_parameters())[n]) for n, p in model.named_parameters()
               if ".switches." not in n)
    pe = build_positional_encoding("alibi+sink", d_model=16, n_heads=2, causal=True)
    assert pe.name == "alibi+sink" and "gpt-oss" in describe(pe, None)
    with pytest.raises(ValueError, match=r"unknown switch\(es\) \['softcap'\] in scheme 'rope\+softcap'; valid "
                                         r"switches: gate, qk_norm, sink, ssmax$"):
        scheme_spec("rope+softcap")
    with pytest.raises(ValueError, match=r"unknown positional scheme 'roper\+sink'; valid choices: none, .*"
                                         r"\(or <scheme>\+<switch>, switches: gate, qk_norm, sink, ssmax\)$"):
        scheme_spec("roper+sink")
    with pytest.raises(ValueError, match=r"'rope_sink\+sink' adds no switch to 'rope_sink'"):
        scheme_spec("rope_sink+sink")


def test_each_switch_is_a_module_with_its_record():
    """Found by convention: every module of ``pelab/model/switches`` but the base is a switch, its record its own."""
    from pathlib import Path

    from pelab.model.switches import switch_class
    from pelab.model.switches.base import Switch
    from pelab.positional.switched import FOLDER, switch_records

    names = sorted(p.stem for p in Path(FOLDER).glob("*.py") if p.stem not in ("__init__", "base"))
    assert list(switch_records()) == names == ["gate", "qk_norm", "sink", "ssmax"]
    for name, record in switch_records().items():
        assert issubclass(switch_class(name), Switch) and record.reference.count("http") == 1 and record.says


def test_the_translation_model_switches_self_attention_only():
    from pelab.tasks.translation.config import Seq2SeqConfig
    from pelab.tasks.translation.model import build_seq2seq_model

    model = build_seq2seq_model("rope_gate", 20, Seq2SeqConfig(d_model=16, encoder_layers=1, decoder_layers=1,
                                                               n_heads=2, d_ff=32), None, 0)
    switched = {n.rsplit(".switches.", 1)[0] for n, _ in model.named_parameters() if ".switches." in n}
    assert switched == {"encoder.layers.0.attn", "decoder.layers.0.self_attn"}


def test_an_unknown_switch_is_refused_in_one_line():
    assert check_switches(["ssmax", "gate"], "x") == ("gate", "ssmax")  # the switches' order: their modules' names
    with pytest.raises(ValueError, match=r"unknown switch\(es\) \['softcap'\] in rope_x; valid switches: gate, "
                                         r"qk_norm, sink, ssmax"):
        check_switches(["softcap"], "rope_x")


def test_the_report_reads_each_switched_scheme_against_its_base_paired_by_seed():
    import pandas as pd

    from pelab.report.switches import base_of, switch_reading

    assert base_of("rope_ssmax") == "rope" and base_of("rope") is None and base_of("none") is None
    ppl = {"rope": [10.0, 11.0, 12.0, 13.0, 14.0], "rope_ssmax": [9.0, 10.5, 12.5, 12.0, 13.0]}
    records = pd.DataFrame([{"task": "lm", "pe": pe, "split": "at_4L", "metric": "ppl_sliding", "seed": seed,
                             "length": "all", "value": v} for pe, values in ppl.items() for seed, v in enumerate(values)])
    text = switch_reading(records, "lm", ["rope", "rope_ssmax"], [("at_4L", "ppl_sliding", "ppl at 256", True)])
    # differences -1, -0.5, +0.5, -1, -1: mean -0.6, sd 0.652, t(0.975, 4) = 2.776: ± 0.809
    assert "`rope_ssmax` (ssmax) against `rope`: ppl at 256 12.000 → 11.400, -0.600 [-1.409, +0.209] (lower on 4 of 5 " \
           "seeds)." in text
    assert "arxiv.org/abs/2501.19399" in text
    assert switch_reading(records, "lm", ["rope_ssmax"], [("at_4L", "ppl_sliding", "x", True)]) == ""  # no base
    same = records.assign(value=1.0)  # ties are counted as such, and a zero difference has no sign
    assert "1.000 → 1.000, +0.000 [+0.000, +0.000] (lower on 0, equal on 5 of 5 seeds)" in switch_reading(
        same, "lm", ["rope", "rope_ssmax"], [("at_4L", "ppl_sliding", "ppl at 256", True)])


def test_pelab_schemes_lists_every_switch_with_its_source():
    from click.testing import CliRunner

    from pelab.cli import main

    out = CliRunner().invoke(main, ["schemes"]).output
    listed = out[out.index("switches (any scheme as <scheme>+<switch>"):].splitlines()[1:]
    assert [line.split()[0] for line in listed] == list(SWITCHES) == ["gate", "qk_norm", "sink", "ssmax"]
    assert all("http" in line for line in listed)
