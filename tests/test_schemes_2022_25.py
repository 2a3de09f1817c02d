"""KERPLE, Sandwich, PoPE, FoX, CoPE and stick-breaking attention against their reference code's arithmetic (re-written here from the repositories
named in each module's docstring) and the properties their papers state."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from pelab.model.attention import combine_attention_bias, with_content_bias
from pelab.model.config import ModelConfig
from pelab.model.sequence import build_sequence_model
from pelab.positional import build_positional_encoding
from pelab.positional.fox import ForgetGate
from pelab.positional.registry import is_control

MODEL = ModelConfig(d_model=32, n_layers=2, n_heads=4, d_ff=64, dropout=0.0)


def reference_kerple_log(r1: torch.Tensor, r2: torch.Tensor, length: int) -> torch.Tensor:
    """chijames/KERPLE ``ParallelKerpleLog.forward`` (causal): diff = tril(i − j); −r1·log(1 + r2·diff), the
    parameters clamped at 1e-2 first. Returns (H, T, T) (0 above the diagonal, which the mask hides)."""
    diff = torch.tril(torch.arange(length).view(length, 1).repeat(1, length) + torch.arange(0, -length, -1)).float()
    r1, r2 = r1.clamp(min=1e-2)[:, None, None], r2.clamp(min=1e-2)[:, None, None]
    return -r1 * torch.log(1 + r2 * diff)


def reference_kerple_power(exponent: torch.Tensor, coefficient: torch.Tensor, length: int) -> torch.Tensor:
    """``ParallelKerplePower.forward`` with the 'ap' arguments: −a·diff^p, p clamped to [1e-2, 2], a ≥ 1e-2."""
    diff = torch.tril(torch.arange(length).view(length, 1).repeat(1, length) + torch.arange(0, -length, -1)).float()
    p, a = exponent.clamp(min=1e-2, max=2)[:, None, None], coefficient.clamp(min=1e-2)[:, None, None]
    return -diff.pow(p) * a


def lower(bias: torch.Tensor) -> torch.Tensor:
    """(H, T, T) with the keys right of the query set to 0, where a causal mask makes any value irrelevant."""
    return torch.tril(torch.nan_to_num(bias, neginf=0.0))


def test_kerple_log_equals_its_reference_code_with_the_clamp():
    pe = build_positional_encoding("kerple", d_model=32, n_heads=4, causal=True)
    with torch.no_grad():  # one of each parameter below the reference's floor
        pe.coefficient.copy_(torch.tensor([1.5, 0.001, 0.3, 1.9]))
        pe.rate.copy_(torch.tensor([0.2, 0.7, -0.5, 0.05]))
    pos = torch.arange(300)
    expected = reference_kerple_log(pe.coefficient.detach(), pe.rate.detach(), 300)
    assert_close(lower(pe.bias(pos, pos)), expected)
    assert pe.bias(pos, pos)[0, 299, 0].item() == pytest.approx(-1.5 * math.log(1 + 0.2 * 299))


def test_kerple_power_equals_its_reference_code_with_the_clamp():
    pe = build_positional_encoding("kerple", d_model=32, n_heads=4, causal=True, options={"kernel": "power"})
    with torch.no_grad():
        pe.coefficient.copy_(torch.tensor([0.5, 0.001, 0.3, 0.9]))
        pe.rate.copy_(torch.tensor([1.2, 2.7, 0.005, 0.5]))  # exponents: one above 2, one below the floor
    pos = torch.arange(50)
    expected = reference_kerple_power(pe.rate.detach(), pe.coefficient.detach(), 50)
    assert_close(lower(pe.bias(pos, pos)), expected)


def test_kerple_clamp_passes_the_gradient_as_the_reference_in_place_clamp():
    """A parameter below the floor reads the floor and still gets the gradient there (not zero, as a plain clamp would
    give), as the reference's parameter reset to the floor each step does; the rate's gradient depends on its value,
    so it shows which value the forward read."""
    pe = build_positional_encoding("kerple", d_model=32, n_heads=4, causal=True)
    with torch.no_grad():
        pe.coefficient.copy_(torch.tensor([0.001, 1.0, 1.0, 1.0]))
        pe.rate.copy_(torch.tensor([0.5, 0.5, 0.5, 0.5]))
    pos = torch.arange(5)
    lower(pe.bias(pos, pos)).sum().backward()
    # d/dr1 of Σ_{i ≥ j} −r1·log(1 + r2 (i − j)) = −Σ log(1 + 0.5·d) over the 15 pairs
    expected = -sum(math.log(1 + 0.5 * (i - j)) for i in range(5) for j in range(i + 1))
    assert pe.coefficient.grad[0].item() == pytest.approx(expected, rel=1e-5)
    pe.zero_grad()
    with torch.no_grad():
        pe.rate.copy_(torch.tensor([-3.0, 0.5, 0.5, 0.5]))  # reads 0.01
    lower(pe.bias(pos, pos))[0].sum().backward()
    # d/dr2 of Σ −r1·log(1 + r2·d) = −Σ r1·d/(1 + r2·d), at r2 = 0.01 (and r1 at its floor 0.01)
    expected = -sum(0.01 * (i - j) / (1 + 0.01 * (i - j)) for i in range(5) for j in range(i + 1))
    assert pe.rate.grad[0].item() == pytest.approx(expected, rel=1e-5)


def test_kerple_params_are_shared_by_every_layer_and_start_in_the_reference_ranges():
    pe = build_positional_encoding("kerple", d_model=32, n_heads=8, causal=True, n_layers=4)
    assert sum(p.numel() for p in pe.parameters()) == 16  # 2H scalars for the whole stack
    assert (pe.coefficient > 0).all() and (pe.coefficient < 2).all() and (pe.rate < 1).all()
    pos = torch.arange(6)
    biases = pe.layer_biases(pos, pos)
    assert len(biases) == 1  # one bias, every layer


@pytest.mark.parametrize("scheme", ["kerple", "sandwich"])
def test_kernel_bias_in_an_encoder_looks_one_way_per_head(scheme):
    pe = build_positional_encoding(scheme, d_model=32, n_heads=4, causal=False)
    causal = build_positional_encoding(scheme, d_model=32, n_heads=4, causal=True)
    causal.load_state_dict(pe.state_dict())
    pos = torch.arange(9)
    bias, left = pe.bias(pos, pos), causal.bias(pos, pos)
    i, j = pos[:, None], pos[None, :]
    for h in range(4):
        watched = j <= i if h % 2 == 0 else j >= i
        assert torch.isinf(bias[h][~watched]).all() and torch.isfinite(bias[h][watched]).all()
        # the right-looking head is the left-looking kernel mirrored
        expected = left[h] if h % 2 == 0 else left[h].T
        assert_close(bias[h][watched], expected[watched])


def reference_sandwich(length: int, hidden: int, heads: int) -> torch.Tensor:
    """NeMo ``SandwichRelativePositionEmbedding.forward`` (causal): (H, T, T)."""
    context = torch.arange(length)[:, None]
    memory = torch.arange(length)[None, :]
    relative = torch.tril((memory - context).abs())
    inv_freq = 1.0 / (10000 ** (2 * torch.arange(1, hidden / 2 + 1) / hidden))
    bias = torch.sum((relative[:, :, None] * inv_freq).cos(), dim=2).repeat(heads, 1, 1)
    scales = torch.arange(1, heads + 1)
    return (bias - hidden / 2) / (scales * 8 / heads)[:, None, None]


def test_sandwich_equals_nemos_code_and_the_sinusoidal_inner_product():
    pe = build_positional_encoding("sandwich", d_model=64, n_heads=4, causal=True)  # d' = Dh = 16
    pos = torch.arange(40)
    bias = pe.bias(pos, pos)
    assert_close(lower(bias), torch.tril(reference_sandwich(40, 16, 4)))
    # p_i·p_j − d'/2 for p_t = [sin(t ω_k), cos(t ω_k)], ω_k = 10000^(−2k/d'), k = 1..d'/2 (the paper's §5)
    omega = 10000.0 ** (-2.0 * torch.arange(1, 9, dtype=torch.float64) / 16)
    p = torch.cat([torch.sin(pos[:, None] * omega), torch.cos(pos[:, None] * omega)], dim=-1)  # (T, d')
    inner = p @ p.T - 8
    for h in range(4):
        assert_close(lower(bias)[h].double(), torch.tril(inner) / (8 * (h + 1) / 4), rtol=1e-5, atol=1e-4)
    assert_close(torch.diagonal(bias, dim1=-2, dim2=-1), torch.zeros(4, 40))
    assert (lower(bias) <= 1e-6).all()


def test_sandwich_has_no_parameters():
    assert not list(build_positional_encoding("sandwich", d_model=32, n_heads=4).parameters())


def test_pope_logits_equal_the_polar_formula():
    """logit_ts·√Dh = Σ_c softplus(q_tc) softplus(k_sc) cos((t − s) θ_c − δ_c), θ_c = 10000^(−c/Dh), δ in [−2π, 0]."""
    torch.manual_seed(0)
    pe = build_positional_encoding("pope", d_model=16, n_heads=2, causal=True)  # Dh = 8
    with torch.no_grad():
        pe.phase_bias.copy_(torch.tensor([[-1.0, 0.5, -7.0, -0.2, -3.0, 0.0, -6.0, -0.1]] * 2))  # two to clamp
    q, k = torch.randn(1, 2, 7, 8), torch.randn(1, 2, 9, 8)
    q_pos, k_pos = torch.arange(100, 107), torch.arange(3, 12)
    rq, rk = pe.rotate(q, k, q_pos, k_pos)
    assert rq.shape == (1, 2, 7, 16) and rk.shape == (1, 2, 9, 16)
    theta = 10000.0 ** (-torch.arange(8) / 8)
    delta = pe.phase_bias.detach().clamp(-2 * math.pi, 0)
    for h in range(2):
        for t in range(7):
            for s in range(9):
                angle = (q_pos[t] - k_pos[s]) * theta - delta[h]
                expected = (F.softplus(q[0, h, t]) * F.softplus(k[0, h, s]) * angle.cos()).sum()
                assert (rq[0, h, t] @ rk[0, h, s]).item() == pytest.approx(expected.item(), rel=1e-4, abs=1e-4)


def test_pope_attention_keeps_the_heads_scale():
    """Queries leave PoPE 2·Dh wide; the fused kernel must still scale by 1/√Dh, as the explicit path."""
    model = build_sequence_model("pope", 20, MODEL, None, 0, causal=True).eval()
    tokens = torch.randint(0, 20, (2, 13), generator=torch.Generator().manual_seed(1))
    fused, _ = model(tokens)
    explicit, weights = model(tokens, need_weights=True)
    assert_close(fused, explicit, rtol=1e-5, atol=1e-5)
    layer = model.encoder.layers[0]
    h = layer.attn_norm(model.pe.embed(model.embedding(tokens), torch.arange(13)))
    q, k, _ = layer.attn.project(h, h)
    rq, rk = model.pe.rotate(q, k, torch.arange(13), torch.arange(13))
    scores = rq @ rk.transpose(-2, -1) / math.sqrt(MODEL.d_model // MODEL.n_heads)
    causal = combine_attention_bias(None, q_len=13, k_len=13, causal=True)
    assert_close(weights[0]["self"], (scores + causal).softmax(-1), rtol=1e-5, atol=1e-6)


def reference_fox_decay(log_fgate: torch.Tensor) -> torch.Tensor:
    """zhixuan-lin/forgetting-transformer, the attention-output path: log_lambda = cumsum(log_fgate);
    decay_bias = log_lambda[:, :, None] − log_lambda[:, None, :]. log_fgate (B·H, T) -> (B·H, T, T)."""
    log_lambda = torch.cumsum(log_fgate, dim=-1)
    return log_lambda[:, :, None] - log_lambda[:, None, :]


def test_fox_decay_equals_its_reference_and_the_sum_of_log_gates():
    torch.manual_seed(0)
    gate = ForgetGate(d_model=16, n_heads=2, causal=True)
    x = torch.randn(3, 10, 16)
    q = k = torch.zeros(3, 2, 10, 8)
    bias = gate.content_bias(x, q, k)  # (B, H, T, T)
    log_f = F.logsigmoid(gate.gate(x)).transpose(1, 2)  # (B, H, T)
    assert_close(lower(bias.flatten(0, 1)), torch.tril(reference_fox_decay(log_f.flatten(0, 1))))
    # D_ij = Σ_{l=j+1}^{i} log f_l, the key's own gate excluded, D_ii = 0
    assert bias[1, 0, 7, 2].item() == pytest.approx(log_f[1, 0, 3:8].sum().item(), rel=1e-5)
    assert_close(torch.diagonal(bias, dim1=-2, dim2=-1), torch.zeros(3, 2, 10))


def test_fox_in_an_encoder_decays_each_way_by_the_gates_between():
    torch.manual_seed(0)
    gate = ForgetGate(d_model=16, n_heads=2, causal=False)
    x = torch.randn(1, 8, 16)
    bias = gate.content_bias(x, torch.zeros(1, 2, 8, 8), torch.zeros(1, 2, 8, 8))[0]
    log_f = F.logsigmoid(gate.gate(x))[0].T  # (H, T)
    assert bias[0, 6, 2].item() == pytest.approx(log_f[0, 3:7].sum().item(), rel=1e-5)  # left: l = j+1..i
    assert bias[1, 2, 6].item() == pytest.approx(log_f[1, 2:6].sum().item(), rel=1e-5)  # right: l = i..j−1
    assert torch.isinf(bias[0, 2, 6]) and torch.isinf(bias[1, 6, 2])


def test_fox_with_every_gate_open_is_nope():
    """f = 1 everywhere (the gate's logit → +∞) makes the decay 0: the same weights give `none`'s logits."""
    fox = build_sequence_model("fox", 20, MODEL, None, 0, causal=True).eval()
    none = build_sequence_model("none", 20, MODEL, None, 0, causal=True).eval()
    with torch.no_grad():
        for gate in fox.pe.gates:
            gate.gate.weight.zero_()
            gate.gate.bias.fill_(50.0)
    tokens = torch.randint(0, 20, (2, 17), generator=torch.Generator().manual_seed(2))
    assert_close(fox(tokens)[0], none(tokens)[0])
    with torch.no_grad():  # a closed gate changes them
        fox.pe.gates[0].gate.bias.fill_(-2.0)
    assert (fox(tokens)[0] - none(tokens)[0]).abs().max() > 1e-2


def test_fox_gates_are_per_layer_zero_bias_and_not_a_control():
    pe = build_positional_encoding("fox", d_model=32, n_heads=4, causal=True, n_layers=3)
    assert [pe.layer(i) for i in range(3)] == list(pe.gates) and len(set(map(id, pe.gates))) == 3
    assert all((g.gate.bias == 0).all() for g in pe.gates)
    assert not is_control("fox") and is_control("none")


@pytest.mark.parametrize("scheme", ["fox", "cope"])
def test_a_causal_content_bias_is_finite_so_the_padding_check_is_not_needed(scheme):
    """``with_content_bias`` checks for queries left with no key only in an encoder: a causal scheme's content bias
    is finite even with saturated gates, so a causal row keeps the keys the masks left it (left padding included)."""
    torch.manual_seed(0)
    pe = build_positional_encoding(scheme, d_model=32, n_heads=4, causal=True, n_layers=1).layer(0)
    if scheme == "fox":
        with torch.no_grad():
            pe.gate.bias.fill_(-200.0)  # log f ≈ −200 a token: Λ_i − Λ_j down to about −2,400
    else:
        with torch.no_grad():
            pe.table.normal_(std=50.0)
    x, q, k = torch.randn(2, 12, 32) * 50, torch.randn(2, 4, 12, 8) * 50, torch.randn(2, 4, 12, 8) * 50
    content = pe.content_bias(x, q, k)
    assert torch.isfinite(content).all() and content.min() < -100
    padding = torch.zeros(2, 12, dtype=torch.bool)
    padding[0, :4] = True  # left padding: the first four queries of row 0 see only padding keys
    masks = combine_attention_bias(None, q_len=12, k_len=12, causal=True, key_padding_mask=padding)
    fast, checked = with_content_bias(masks, content, causal=True), with_content_bias(masks, content, causal=False)
    assert torch.equal(fast, checked) and not torch.isinf(fast).all(dim=-1).any()


@pytest.mark.parametrize("scheme", ["kerple", "sandwich", "pope", "fox", "cope", "stick_breaking"])
def test_incremental_decoding_equals_the_whole_row(scheme):
    model = build_sequence_model(scheme, 20, MODEL, None, 0, causal=True).eval()
    with torch.no_grad():  # CoPE's tables start at zero (NoPE): give them something to read
        tables = [m.table for m in model.modules() if isinstance(getattr(m, "table", None), torch.nn.Parameter)]
        for i, table in enumerate(tables):  # each its own: a layer reading another's table would show
            table.normal_(generator=torch.Generator().manual_seed(5 + i))
    tokens = torch.randint(0, 20, (3, 12), generator=torch.Generator().manual_seed(3))
    whole, _ = model(tokens)
    caches, positions = model.new_caches(), torch.arange(12)
    parts = [model.extend(tokens[:, :5], caches, positions[:5])]
    parts += [model.extend(tokens[:, t:t + 1], caches, positions[:t + 1]) for t in range(5, 12)]
    assert_close(torch.cat(parts, dim=1), whole, rtol=1e-5, atol=1e-5)


def reference_cope_logits(query: torch.Tensor, key: torch.Tensor, pos_emb: torch.Tensor, npos: int) -> torch.Tensor:
    """facebookresearch/RAM ``ContextPosSelfAttn.forward`` (causal, ``cope_nodiv`` off): query, key (B·H, T, d),
    pos_emb (1, d, npos) -> the attention logits (B·H, T, T) with −inf above the diagonal."""
    d, length = query.shape[-1], query.shape[1]
    attn_mask = torch.ones(length, length).tril()
    gate_logits = torch.bmm(query, key.transpose(-1, -2))
    gates = torch.sigmoid(gate_logits / math.sqrt(d)) * attn_mask
    positions = gates.flip(-1).cumsum(dim=-1).flip(-1).clamp(max=npos - 1)
    pos_logits_fixed = torch.matmul(query, pos_emb)
    ceil, floor = positions.ceil().long(), positions.floor().long()
    w = positions - floor
    pos_logits = pos_logits_fixed.gather(-1, ceil) * w + pos_logits_fixed.gather(-1, floor) * (1 - w)
    return (gate_logits + pos_logits) / math.sqrt(d) + attn_mask.log()


@pytest.mark.parametrize("npos", [3, 64])  # 3: most counts clamp to the last row
def test_cope_logits_equal_its_reference_code(npos):
    torch.manual_seed(0)
    layer = build_positional_encoding("cope", d_model=16, n_heads=2, causal=True, options={"npos": npos}).layer(0)
    with torch.no_grad():
        layer.table.normal_()
    q, k = torch.randn(3, 2, 9, 8), torch.randn(3, 2, 9, 8)
    ours = q @ k.transpose(-2, -1) / math.sqrt(8) + layer.content_bias(torch.zeros(3, 9, 16), q, k)
    ours = ours + combine_attention_bias(None, q_len=9, k_len=9, causal=True)[0]
    expected = reference_cope_logits(q.flatten(0, 1), k.flatten(0, 1), layer.table.detach()[None], npos)
    assert_close(ours.flatten(0, 1), expected, rtol=1e-5, atol=1e-5)


def test_cope_with_a_zero_table_is_nope_and_each_layer_has_its_own_table():
    cope = build_sequence_model("cope", 20, MODEL, None, 0, causal=True).eval()
    none = build_sequence_model("none", 20, MODEL, None, 0, causal=True).eval()
    tokens = torch.randint(0, 20, (2, 15), generator=torch.Generator().manual_seed(4))
    assert_close(cope(tokens)[0], none(tokens)[0])
    assert len({id(cope.pe.layer(i).table) for i in range(MODEL.n_layers)}) == MODEL.n_layers
    with torch.no_grad():
        cope.pe.layer(1).table.normal_()
    assert (cope(tokens)[0] - none(tokens)[0]).abs().max() > 1e-2
    assert not is_control("cope")


def test_cope_in_an_encoder_counts_each_way():
    torch.manual_seed(0)
    layer = build_positional_encoding("cope", d_model=16, n_heads=2, causal=False).layer(0)
    with torch.no_grad():
        layer.table.copy_(torch.arange(64.0).repeat(8, 1))  # q·e[p] = p·Σq: the count, readable
    q, k = torch.ones(1, 2, 6, 8), torch.zeros(1, 2, 6, 8)  # every gate σ(0) = 1/2
    bias = layer.content_bias(torch.zeros(1, 6, 16), q, k)[0] * math.sqrt(8) / 8  # (H, T, T): p_ij
    assert bias[0, 4, 1].item() == pytest.approx(0.5 * 4) and bias[1, 1, 4].item() == pytest.approx(0.5 * 4)
    assert torch.isinf(bias[0, 1, 4]) and torch.isinf(bias[1, 4, 1])


def reference_stickbreaking(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """shawntan/stickbreaking-attention ``sb_ref.stickbreaking`` (``attend_current=False``), with the remainder on
    the query's own value (dolomite-engine ``SBAttention``, ``sb_remainder=True``): the attention output."""
    length = q.shape[-2]
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.ones(length, length).triu(0).bool()
    log_z = F.logsigmoid(logits).masked_fill(mask, -1e5)
    log_beta = F.logsigmoid(-logits).masked_fill(mask, 0)
    cm = torch.ones(length, length).tril(-1)
    re_cum_log_beta = torch.einsum("bhij,jk->bhik", log_beta, cm)
    att = (log_z + re_cum_log_beta).exp()
    return att @ v + (1 - att.sum(dim=-1))[..., None] * v


def test_stick_breaking_output_equals_its_reference_code():
    torch.manual_seed(0)
    sb = build_positional_encoding("stick_breaking", d_model=16, n_heads=2, causal=True)
    q, k, v = torch.randn(3, 2, 10, 8) * 2, torch.randn(3, 2, 10, 8) * 2, torch.randn(3, 2, 10, 8)
    scores = q @ k.transpose(-2, -1) / math.sqrt(8) + combine_attention_bias(None, q_len=10, k_len=10, causal=True)
    weights = sb.attention_weights(scores)
    assert_close(weights @ v, reference_stickbreaking(q, k, v), rtol=1e-5, atol=1e-5)
    assert (weights >= 0).all()
    assert_close(weights.sum(-1), torch.ones(3, 2, 10))  # with the rest of the stick on the query's own key
    off_diagonal = weights * (1 - torch.eye(10))
    assert (off_diagonal.sum(-1) <= 1 + 1e-6).all()  # the stick's shares sum to at most 1
    assert_close(weights[..., 0, :], torch.eye(10)[0].expand(3, 2, 10))  # the first query: nothing before it
    # a key the query is sure of (β = 1) shadows every key behind it
    assert weights[0, 0, 5, 2].item() == pytest.approx(
        torch.sigmoid(scores[0, 0, 5, 2]).item() * math.prod(1 - torch.sigmoid(scores[0, 0, 5, l]).item()
                                                             for l in (3, 4)), rel=1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_stick_breaking_sums_its_stick_in_float32_under_autocast(causal):
    """The sums of log(1 − β) stay in float32 under autocast (a product with a triangular matrix, as the reference's
    einsum, would run in bfloat16), so the weights under autocast are the float32 weights."""
    torch.manual_seed(0)
    sb = build_positional_encoding("stick_breaking", d_model=16, n_heads=2, causal=causal)
    scores = torch.randn(2, 2, 40, 40) * 3
    if causal:
        scores = scores + combine_attention_bias(None, q_len=40, k_len=40, causal=True)
    plain = sb.attention_weights(scores)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        autocast = sb.attention_weights(scores)
    assert autocast.dtype == torch.float32
    assert_close(autocast, plain, rtol=1e-6, atol=1e-7)


def test_stick_breaking_in_an_encoder_breaks_each_way_and_is_not_a_control():
    sb = build_positional_encoding("stick_breaking", d_model=16, n_heads=2, causal=False)
    scores = torch.randn(1, 2, 6, 6)
    weights = sb.attention_weights(scores)[0]
    mirrored = sb.attention_weights(scores.flip(-1).flip(-2)[:, [1, 0]])[0].flip(-1).flip(-2)
    assert_close(weights[1], mirrored[0])  # the right-looking head is the left-looking one, mirrored
    assert (weights[0].triu(1) == 0).all() and (weights[1].tril(-1) == 0).all()
    assert not is_control("stick_breaking")


def test_pelab_schemes_lists_each_with_its_slot_and_source():
    from click.testing import CliRunner

    from pelab.cli import main

    lines = CliRunner().invoke(main, ["schemes"]).output.splitlines()
    for name, slot, source in (("kerple", "bias", "chijames/KERPLE"), ("sandwich", "bias", "NeMo"),
                               ("pope", "rotate", "PolarEmbedding"), ("fox", "content_bias per layer", "zhixuan-lin"),
                               ("cope", "content_bias per layer", "facebookresearch/RAM"),
                               ("stick_breaking", "attention_weights", "shawntan/stickbreaking-attention")):
        at = next(i for i, line in enumerate(lines) if line.split()[0] == name)
        assert lines[at].split(None, 1)[1].startswith(slot) and "source:" in lines[at + 1] and source in lines[at + 1]


def test_cope_s_table_has_l_plus_one_rows_and_says_whether_they_cover_the_training_rows(repo_root):
    """A row of L tokens counts up to L open gates: positions 0..L, L + 1 rows (the reference's block size + 1). The
    LM sets that at every profile; ``describe`` says when the table is short, exact, or has rows that never train."""
    from pelab.compose import compose_params
    from pelab.positional import Usage, describe

    for profile in ("smoke", "quick", "full"):
        composed = compose_params(repo_root / "conf", [f"profile={profile}", "lm_schemes=[cope]"])
        assert composed["lm_runs"]["lm-cope"]["options"]["npos"] == composed["lm"]["data"]["context"] + 1, profile
    usage = Usage("the LM", 64, 256, range(1, 64))
    said = {npos: describe(build_positional_encoding("cope", d_model=16, n_heads=2, causal=True,
                                                     options={"npos": npos}), usage) for npos in (64, 65, 257)}
    assert "covers every training row" in said[65] and "rows 0..64" in said[65]
    assert "shorter than the longest training row needs (64 tokens: 65 rows)" in said[64]
    assert "its rows past 64 never train" in said[257]
