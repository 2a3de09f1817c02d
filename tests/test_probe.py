"""The per-run probe's diagnostics against exact answers, and the probe in evaluation's records."""

from __future__ import annotations

import math

import pytest
import torch

from pelab.model.config import ModelConfig
from pelab.model.sequence import build_sequence_model
from pelab.positional import scheme_names, scheme_options
from pelab.probe import Probe, probe_rows
from pelab.probe.diagnostics import attention_diagnostics, frequency_use, uniform_distance

CFG = ModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32)


def model_for(scheme: str, causal: bool = True, vocab: int = 5):
    return build_sequence_model(scheme, vocab, CFG, scheme_options(scheme), seed=0, causal=causal).eval()


def by_metric(rows, length):
    return {r["metric"]: r["value"] for r in rows if r["length"] == length}


@pytest.mark.parametrize("causal", [True, False])
def test_without_positions_repeated_tokens_are_attended_uniformly(causal):
    """No positional encoding, one token repeated: every key scores the same, so query i spreads 1/t over the t
    keys it sees: entropy log t, first-token share 1/t (ratio 1), distance the uniform one."""
    t = 12
    rows = probe_rows(model_for("none", causal), Probe(6, [torch.full((3, t), 2)]), torch.device("cpu"))
    got = by_metric(rows, t)
    seen = torch.arange(2, t + 1, dtype=torch.float64) if causal else torch.full((t,), float(t), dtype=torch.float64)
    assert got["attn_entropy"] == pytest.approx(float(seen.log().mean()), rel=1e-5)
    assert got["attn_entropy_norm"] == pytest.approx(1.0, rel=1e-5)
    assert got["first_token_share"] == pytest.approx(float((1 / seen).mean()), rel=1e-5)
    assert got["first_token_ratio"] == pytest.approx(1.0, rel=1e-5)
    assert got["attn_distance"] == pytest.approx(float(uniform_distance(t, causal).mean()), rel=1e-5)
    assert got["attn_distance_norm"] == pytest.approx(1.0, rel=1e-5)
    assert by_metric(rows, "all") == {"trained_length": 6.0}
    assert not any(r["metric"].startswith("rope_band") for r in rows)  # nothing rotated


def test_alibi_puts_no_extra_mass_on_the_first_token_of_repeated_tokens():
    """ALiBi on one repeated token: query i weights key j by exp(-m (i - j)) (slope m per head), so the first token
    gets exactly exp(-m i) / sum_{d <= i} exp(-m d), below the uniform 1/(i + 1); the probe's means match it."""
    t = 10
    model = model_for("alibi")
    rows = probe_rows(model, Probe(t, [torch.full((2, t), 1)]), torch.device("cpu"))
    slopes = model.pe.slopes.double().flatten()  # (H,)
    i = torch.arange(1, t, dtype=torch.float64)
    d = torch.arange(t, dtype=torch.float64)
    first = torch.stack([torch.exp(-m * i) / torch.stack([torch.exp(-m * d[:k + 1]).sum() for k in i.long()])
                         for m in slopes])  # (H, T - 1)
    got = by_metric(rows, t)
    assert got["first_token_share"] == pytest.approx(float(first.mean()), rel=1e-5)
    assert got["first_token_ratio"] < 1.0 and got["attn_distance_norm"] < 1.0  # recency, no sink


def test_diagnostics_of_hand_made_weights():
    """One query attending all on the first key, one all on itself, bidirectional T = 2."""
    w = torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]])  # (1, 1, 2, 2): both on key 0
    got = attention_diagnostics(w, causal=False)
    assert got["attn_entropy"] == pytest.approx(0.0, abs=1e-12)
    assert got["first_token_share"] == 1.0 and got["first_token_ratio"] == 2.0
    assert got["attn_distance"] == 0.5  # query 0: distance 0; query 1: distance 1
    assert got["attn_distance_norm"] == pytest.approx(1.0)  # uniform: 0.5 for both


def test_frequency_use_is_each_pairs_share_of_query_times_key_norms():
    q = torch.zeros(1, 1, 3, 4)
    k = torch.zeros(1, 1, 3, 4)
    q[..., 0], q[..., 3] = 3.0, 1.0  # pair 0 norm 3, pair 1 norm 1
    k[..., 1], k[..., 2] = 1.0, 1.0  # pair 0 norm 1, pair 1 norm 1
    assert frequency_use(q, k).tolist() == pytest.approx([0.75, 0.25])


@pytest.mark.parametrize("scheme", ["rope", "rand_rope", "xpos"])
def test_rotary_schemes_report_every_band_with_the_period_of_its_frequency(scheme):
    model = model_for(scheme)
    rows = probe_rows(model, Probe(8, [torch.randint(0, 5, (2, 8)), torch.randint(0, 5, (2, 16))]),
                      torch.device("cpu"))
    bands = CFG.d_model // CFG.n_heads // 2
    first = by_metric(rows, 8)
    shares = [first[f"rope_band_{b:02d}_share"] for b in range(bands)]
    assert sum(shares) == pytest.approx(1.0) and all(s > 0 for s in shares)
    base = model.pe.inner.base if hasattr(model.pe, "inner") else model.pe.base
    for b in range(bands):  # theta_b = base^(-2b/Dh), period 2 pi / theta_b
        assert first[f"rope_band_{b:02d}_period"] == pytest.approx(2 * math.pi * base ** (2 * b / (2 * bands)),
                                                                    rel=1e-5)
    assert not any(r["metric"].startswith("rope_band") for r in rows if r["length"] == 16)  # first length only


# mamba has no attention to read: tests/test_ssm.py checks the probe leaves it the trained length alone
@pytest.mark.parametrize("scheme", sorted(set(scheme_names()) - {"mamba"}))
def test_every_scheme_gives_finite_diagnostics_in_and_beyond(scheme):
    model = model_for(scheme, causal=True)
    rows = probe_rows(model, Probe(6, [torch.randint(0, 5, (2, 6)), torch.randint(0, 5, (2, 24))]),
                      torch.device("cpu"))
    values = [r["value"] for r in rows]
    assert all(math.isfinite(v) for v in values)
    for length in (6, 24):
        got = by_metric(rows, length)
        assert 0 < got["attn_entropy_norm"] <= 1 + 1e-6 and 0 <= got["first_token_share"] <= 1


@pytest.mark.parametrize("scheme", ["none", "sinusoidal", "rope", "alibi", "rand_rope"])
def test_the_copy_captures_hold_what_the_report_draws_for_every_scheme(scheme):
    """What evaluation saves as probe.pt for a copy run: the post's example row with labels, the attention of every
    layer and head (rows sum to 1), the prediction, and layer 0's logits, whose softmax on the example is layer 0's
    attention where no logit bias is added (none, sinusoidal, rope)."""
    from pelab.probe.captures import layer0_scores
    from pelab.tasks.copy.config import CopyDataConfig
    from pelab.tasks.copy.model import build_copy_model
    from pelab.tasks.copy.task import CopyTask
    from pelab.tasks.scoring import scoring

    data = CopyDataConfig(context=12, max_len=5, long_context=24, long_min_len=6, long_max_len=11)
    model = build_copy_model(scheme, data.vocab_size, CFG, scheme_options(scheme), 0).eval()

    class Cfg:  # the part of the task config the captures read
        pass

    cfg = Cfg()
    cfg.data = data
    got = scoring(CopyTask()).captures(cfg, model, None, torch.device("cpu"))
    assert got["labels"] == ["7", "1", "8", "2", "<copy>"] + ["_"] * 7
    assert got["target"][:9].tolist() == [7, 1, 8, 2, data.copy_token, 7, 1, 8, 2]
    assert got["attention"].shape == (CFG.n_layers, CFG.n_heads, 12, 12)
    torch.testing.assert_close(got["attention"].sum(-1), torch.ones(CFG.n_layers, CFG.n_heads, 12))
    assert got["predicted"].shape == (12,) and len(got["predicted_labels"]) == 12
    assert got["layer0_positions"].shape == got["layer0_same_token"].shape == (CFG.n_heads, 12, 12)
    if scheme in ("none", "sinusoidal", "rope"):
        torch.testing.assert_close(layer0_scores(model, 12, got["tokens"]).softmax(-1), got["attention"][0],
                                   rtol=1e-5, atol=1e-6)
    if scheme == "none":  # no position signal: layer 0 sees the same (zero) input everywhere, one score per head
        assert float(got["layer0_positions"].std(dim=(-2, -1)).max()) < 1e-6


def _sink(t: int, share: float) -> torch.Tensor:
    """(1, 1, T, T) causal weights: ``share`` on the first token, the rest uniform over the other keys seen."""
    w = torch.zeros(1, 1, t, t, dtype=torch.float64)
    w[0, 0, 0, 0] = 1.0
    for i in range(1, t):
        w[0, 0, i, 0] = share
        w[0, 0, i, 1:i + 1] = (1 - share) / i
    return w


def _window(t: int, width: int) -> torch.Tensor:
    """(1, 1, T, T) causal weights uniform over the last ``width`` keys each query sees."""
    w = torch.zeros(1, 1, t, t, dtype=torch.float64)
    for i in range(t):
        lo = max(0, i - width + 1)
        w[0, 0, i, lo:i + 1] = 1.0 / (i + 1 - lo)
    return w


def test_a_constant_sink_and_a_fixed_window_show_no_length_trend_in_the_binned_diagnostics():
    """The issue's cases: the normalised forms trend with T (a constant sink's first-token ratio 3.3 at T = 64 and
    25.7 at 512); the binned absolute ones read the same within (just below L) and beyond L, at every length."""
    from pelab.probe.diagnostics import binned

    L = 64
    ratios = [attention_diagnostics(_sink(t, 0.2), causal=True)["first_token_ratio"] for t in (64, 512)]
    assert ratios[1] > 5 * ratios[0]  # the trend by construction that the binned forms remove
    for t in (128, 256, 512):
        got = binned(_sink(t, 0.2), causal=True, trained_length=L)
        assert got["first_token_share_within"] == pytest.approx(0.2) == got["first_token_share_beyond"]
        window = binned(_window(t, 16), causal=True, trained_length=L)
        assert window["attn_entropy_beyond"] == pytest.approx(math.log(16))  # every query beyond L sees 16 keys
        assert window["attn_entropy_within"] == pytest.approx(math.log(16))  # and so does every one just below L
        assert window["attn_distance_beyond"] == pytest.approx(7.5)
        assert binned(_window(t, 16), True, L)["attn_entropy_within"] == pytest.approx(
            binned(_window(L, 16), True, L)["attn_entropy_within"])  # the same queries: the same number at any T
    assert set(binned(_sink(L, 0.2), True, L)) == {"attn_entropy_within", "first_token_share_within",
                                                  "attn_distance_within"}  # no query beyond L in a row of L
    uniform = binned(torch.full((1, 1, 128, 128), 1 / 128, dtype=torch.float64), causal=False, trained_length=L)
    assert uniform["attn_entropy_within"] == pytest.approx(math.log(128)) == uniform["attn_entropy_beyond"]


def test_a_perfect_extrapolator_reads_the_window_null_and_true_dilution_reads_a_rise():
    """Issue 53: against all queries before L, attention to exactly the last L keys (a perfect extrapolator) read
    +0.90 nats of entropy rise at 2L. Against the band just below L it reads the small rise ``window_null`` derives
    (+0.057 nats at L = 64, under the reading's margin); attention spread over every key seen (true dilution) reads a
    rise well past it, and the reading names only that model as diluting."""
    from pelab.analysis.diagnostics import COMPARED, RISE_MARGIN, Change, reading, window_null
    from pelab.probe.diagnostics import binned
    from pelab.stats import summarize

    L = 64
    found = {}
    for t in (128, 256, 512):
        perfect, diluted = binned(_window(t, L), True, L), binned(_window(t, t), True, L)
        null = window_null(t, L)
        for m in COMPARED:  # the derived null is what the probe's bins read for that attention
            assert perfect[f"{m}_beyond"] - perfect[f"{m}_within"] == pytest.approx(null[m], abs=1e-9), (t, m)
        assert 0 < null["attn_entropy"] < RISE_MARGIN and null["attn_entropy"] == pytest.approx(0.0570, abs=1e-4)
        rise = diluted["attn_entropy_beyond"] - diluted["attn_entropy_within"]
        assert rise > null["attn_entropy"] + 3 * RISE_MARGIN, (t, rise)  # +0.45 nats at 2L, 0.91 at 4L, 1.44 at 8L
    for name, w in (("perfect", _window(128, L)), ("diluted", _window(128, 128))):
        got = binned(w, True, L)
        found[name] = Change([0.5], {f"{m}_{b}": (summarize([got[f"{m}_{b}"]]), summarize([got[f"{m}_{b}"]]))
                                     for m in COMPARED for b in ("within", "beyond")})
    read = reading(found, None, window_null(128, L)["attn_entropy"])
    assert read.diluted == ("diluted",) and read.most == "diluted" and read.least == "perfect"


def test_an_encoder_s_window_null_is_zero_a_causal_model_s_is_derived():
    """Issue 72: an encoder's query sees every key at every position, so uniform attention reads the same entropy in
    both bins (null 0); the window-of-L null is a causal model's. A task that records no ``causal`` fact is causal."""
    import pandas as pd

    from pelab.probe.diagnostics import binned
    from pelab.report.diagnostics import causal

    t, L = 64, 32
    uniform = torch.full((1, 1, t, t), 1.0 / t)  # every query over every key (an encoder)
    read = binned(uniform, False, L)
    assert read["attn_entropy_beyond"] - read["attn_entropy_within"] == pytest.approx(0.0, abs=1e-9)
    records = pd.DataFrame([{"task": "reverse", "split": "task", "metric": "causal", "value": 0.0},
                            {"task": "reverse_causal", "split": "task", "metric": "causal", "value": 1.0}])
    assert not causal(records, "reverse") and causal(records, "reverse_causal") and causal(records, "lm")
