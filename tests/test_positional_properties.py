"""Properties the math promises, invariances, and every registered scheme through the copy model."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from pelab.model.attention import MultiHeadAttention, combine_attention_bias
from pelab.model.blocks import Encoder
from pelab.positional import build_positional_encoding, scheme_names
from pelab.positional.fire import FIRE
from pelab.positional.functional import rope_angles, rope_rotate, sinusoidal_table
from pelab.tasks.copy.config import ModelConfig
from pelab.tasks.copy.model import CopyTransformer, build_copy_model

# xpos: causal attention only (tests/test_length.py); mamba: no attention, causal only (tests/test_ssm.py)
SCHEMES = [s for s in scheme_names() if s not in ("xpos", "mamba")]
# fire: relative, and shift-invariant too (its normaliser reads extents relative to the keys; pelab.positional.fire).
# The randomized schemes are their wrapped scheme at the positions a model gives them (the copy model: 0..T-1).
RELATIVE_SCHEMES = ["rope", "alibi", "alibi_sym", "t5", "alibi_offset", "fire", "rand_rope"]
ABSOLUTE_SCHEMES = ["sinusoidal", "learned", "rand_sinusoidal", "rand_learned"]
BIAS_SCHEMES = ["alibi", "alibi_sym", "t5", "alibi_offset", "fire"]
# layouts: relative where every layer type is (RoPE, NoPE; sliding windows are relative spans); Llama 4's chunks and
# query temperature are drawn at absolute positions, as in its modelling code
RELATIVE_SCHEMES += ["smollm3", "command_a", "gemma3", "gemma4", "gpt_oss"]  # gpt-oss: YaRN's rotation, sinks
RELATIVE_SCHEMES += ["rope_theta10", "rope_theta100", "rope_theta1k", "rope_theta1m"]  # RoPE at other bases
RELATIVE_SCHEMES += ["hope"]  # RoPE with its slow pairs unrotated: a rotation by the offset still
# RoPE with a switch: SSMax's n is every key of a bidirectional row, the sink and the gate read no position
RELATIVE_SCHEMES += ["rope_ssmax", "rope_sink", "rope_gate"]
ABSOLUTE_SCHEMES += ["llama4"]
# SWAN: relative in training (NoPE, sliding RoPE); evaluated, its NoPE layers scale queries by log_a(a + p) at p
EVALUATION_SCALED = ["swan"]
# FoPE: a series of several frequencies is no rotation by the offset (σ > 0; tests/test_fope.py)
ABSOLUTE_SCHEMES += ["fope"]
# the schemes of 2022-25: kernel biases, polar positions, and FoX, CoPE and stick-breaking,
# whose gates read no position at all
RELATIVE_SCHEMES += ["kerple", "sandwich", "pope", "fox", "cope", "stick_breaking"]
BIAS_SCHEMES += ["kerple", "sandwich"]

TRAIN_LENGTH = 20
VOCAB = 12
MODEL = ModelConfig(d_model=32, n_layers=2, n_heads=4, d_ff=64, dropout=0.0)


def test_scheme_groups_cover_the_registry() -> None:
    """A new scheme must be sorted into relative/absolute here so the invariance tests cover it."""
    assert sorted(RELATIVE_SCHEMES + ABSOLUTE_SCHEMES + EVALUATION_SCALED + ["none"]) == sorted(SCHEMES)


def make_model(scheme: str, seed: int = 0) -> CopyTransformer:
    model = build_copy_model(scheme, VOCAB, MODEL, None, seed).eval()
    with torch.no_grad():  # relative biases start near zero (T5 std 0.02); make them matter
        for module in model.modules():
            if hasattr(module, "table") and isinstance(module.table, torch.nn.Embedding):
                module.table.weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(seed))
            if isinstance(module, FIRE):  # its MLP starts nearly flat over short distances
                for param in module.mlp.parameters():
                    param.normal_(0.0, 2.0, generator=torch.Generator().manual_seed(seed))
    return model


def tokens(batch: int, length: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------
# Sinusoidal
# ---------------------------------------------------------------------------------------------


def sinusoidal_shift_matrix(phi: float, dim: int, base: float = 10000.0) -> torch.Tensor:
    """M(φ), block-diagonal: [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a]."""
    omega = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    c, s = torch.cos(phi * omega), torch.sin(phi * omega)
    m = torch.zeros(dim, dim, dtype=torch.float64)
    idx = torch.arange(dim // 2)
    m[2 * idx, 2 * idx] = c
    m[2 * idx, 2 * idx + 1] = s
    m[2 * idx + 1, 2 * idx] = -s
    m[2 * idx + 1, 2 * idx + 1] = c
    return m


@pytest.mark.parametrize("phi", [1, 3, 17, 100])
@pytest.mark.parametrize("dim", [8, 64])
def test_sinusoidal_shift_is_a_fixed_block_rotation(phi: int, dim: int) -> None:
    positions = torch.arange(0, 200, dtype=torch.float64)
    table = sinusoidal_table(positions, dim)  # (T, D)
    shifted = sinusoidal_table(positions + phi, dim)
    assert table.dtype == torch.float64
    predicted = table @ sinusoidal_shift_matrix(phi, dim).T  # rows: M(φ) · PE(t)
    assert (predicted - shifted).abs().max().item() < 1e-10


@pytest.mark.parametrize("dim", [2, 16, 64, 130])
def test_sinusoidal_rows_have_norm_sqrt_half_dim(dim: int) -> None:
    table = sinusoidal_table(torch.arange(0, 1000, dtype=torch.float64), dim)
    norms = table.norm(dim=-1)
    assert_close(norms, torch.full_like(norms, math.sqrt(dim / 2)), rtol=0, atol=1e-12)


def test_sinusoidal_table_matches_the_formula_and_dtypes() -> None:
    positions = torch.tensor([0, 1, 5, 40])
    table = sinusoidal_table(positions, 6, base=100.0)
    assert table.shape == (4, 6) and table.dtype == torch.float32
    assert_close(table[0], torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0]))
    t, i = 5.0, 1  # PE(5, 2) = sin(5 · 100^(-2/6)), PE(5, 3) = cos(...)
    angle = t * 100.0 ** (-2 * i / 6)
    assert_close(table[2, 2:4], torch.tensor([math.sin(angle), math.cos(angle)]))


# ---------------------------------------------------------------------------------------------
# RoPE
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shift", [1, 7, 250])
def test_rope_scores_depend_only_on_relative_offset(shift: int) -> None:
    torch.manual_seed(0)
    head_dim = 16
    q, k = torch.randn(50, head_dim, dtype=torch.float64), torch.randn(50, head_dim, dtype=torch.float64)
    m = torch.randint(0, 100, (50,)).double()  # a query position per pair
    n = torch.randint(0, 100, (50,)).double()  # a key position per pair

    def score(qp: torch.Tensor, kp: torch.Tensor) -> torch.Tensor:
        # row i of q is rotated at qp[i], row i of k at kp[i]; score_i = <R_qp q_i, R_kp k_i>
        return (rope_rotate(q, rope_angles(qp, head_dim)) * rope_rotate(k, rope_angles(kp, head_dim))).sum(-1)

    assert_close(score(m + shift, n + shift), score(m, n), rtol=0, atol=1e-10)
    # and the scores genuinely depend on the offset: moving only the key changes them
    assert (score(m, n + 1) - score(m, n)).abs().max() > 1e-3


def test_rope_preserves_norm_shape_and_dtype() -> None:
    x = torch.randn(2, 3, 11, 8, dtype=torch.float64)
    y = rope_rotate(x, rope_angles(torch.arange(11), 8))
    assert y.shape == x.shape and y.dtype == x.dtype
    assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-6, atol=1e-6)
    assert_close(y[..., 0, :], x[..., 0, :])  # position 0 is the identity


@pytest.mark.parametrize("shift", [3, 64])
def test_rope_module_scores_invariant_to_position_shift(shift: int) -> None:
    torch.manual_seed(1)
    pe = build_positional_encoding("rope", d_model=32, n_heads=4)
    q, k = torch.randn(2, 4, 15, 8), torch.randn(2, 4, 15, 8)  # (B, H, T, Dh)
    pos = torch.arange(15)

    def scores(p: torch.Tensor) -> torch.Tensor:
        rq, rk = pe.rotate(q, k, p, p)
        return rq @ rk.transpose(-2, -1)  # (B, H, T, T)

    assert_close(scores(pos + shift), scores(pos), rtol=1e-4, atol=1e-4)
    assert (scores(pos) - q @ k.transpose(-2, -1)).abs().max() > 1e-2  # the rotation does something


# ---------------------------------------------------------------------------------------------
# Relative biases
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", BIAS_SCHEMES)
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_relative_bias_invariant_to_position_shift(scheme: str, causal: bool) -> None:
    torch.manual_seed(0)
    pe = build_positional_encoding(scheme, d_model=32, n_heads=4, causal=causal)
    pos = torch.arange(25)
    bias = pe.bias(pos, pos)
    assert bias.shape == (4, 25, 25)
    for shift in (1, 10, 1000):
        assert_close(pe.bias(pos + shift, pos + shift), bias, rtol=0, atol=0)


def test_alibi_bidirectional_heads_look_one_way() -> None:
    n_heads, t = 6, 9
    pe = build_positional_encoding("alibi", d_model=24, n_heads=n_heads, causal=False)
    pos = torch.arange(t)
    bias = pe.bias(pos, pos)  # (H, T, T)
    slopes = pe.slopes
    i, j = pos[:, None], pos[None, :]
    distance = (i - j).abs().float()
    for h in range(n_heads):
        visible = j <= i if h % 2 == 0 else j >= i  # even heads: left; odd heads: right
        expected = torch.where(visible, -slopes[h] * distance, torch.tensor(float("-inf")))
        assert_close(bias[h], expected)
    assert_close(torch.diagonal(bias, dim1=-2, dim2=-1), torch.zeros(n_heads, t))


@pytest.mark.parametrize("scheme", ["alibi", "alibi_sym"])
def test_alibi_causal_is_the_standard_causal_bias(scheme: str) -> None:
    n_heads, t = 4, 7
    pe = build_positional_encoding(scheme, d_model=16, n_heads=n_heads, causal=True)
    pos = torch.arange(t)
    bias = combine_attention_bias(pe.bias(pos, pos), q_len=t, k_len=t, causal=True)[0]  # (H, T, T)
    i, j = pos[:, None], pos[None, :]
    lower = -pe.slopes[:, None, None] * (i - j).float()  # -m·(i − j)
    expected = torch.where(j <= i, lower, torch.tensor(float("-inf")))
    assert_close(bias, expected)


def test_alibi_offset_is_the_randomized_pe_studys_bidirectional_alibi() -> None:
    """Ruoss et al. 2023, compute_alibi_encodings_biases: −|i − j| everywhere, + 1/2 below the diagonal (keys left
    of the query), times each head's slope."""
    pe = build_positional_encoding("alibi_offset", d_model=16, n_heads=4)
    pos = torch.arange(5)
    expected = torch.tensor([[-abs(i - j) + (0.5 if j < i else 0.0) for j in range(5)] for i in range(5)])
    assert_close(pe.bias(pos, pos), pe.slopes[:, None, None] * expected[None])
    assert not torch.equal(pe.bias(pos, pos), pe.bias(pos, pos).transpose(-1, -2))  # left and right differ


def test_alibi_sym_is_symmetric() -> None:
    pe = build_positional_encoding("alibi_sym", d_model=16, n_heads=4)
    pos = torch.arange(12)
    bias = pe.bias(pos, pos)
    assert_close(bias, bias.transpose(-1, -2), rtol=0, atol=0)
    assert_close(bias[:, 0, 5], -5 * pe.slopes)


# ---------------------------------------------------------------------------------------------
# The whole model
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_explicit_arange_positions_equal_the_default(scheme: str) -> None:
    """The default positions are 0..T-1, or a randomized scheme's fixed evaluation draw for the length."""
    from pelab.positional.randomized import RandomizedPositions

    model = make_model(scheme)
    x = tokens(3, TRAIN_LENGTH)
    positions = (model.pe.sample_positions(TRAIN_LENGTH) if isinstance(model.pe, RandomizedPositions)
                 else torch.arange(TRAIN_LENGTH))
    with torch.no_grad():
        default, _ = model(x)
        explicit, _ = model(x, positions=positions)
    assert_close(explicit, default, rtol=0, atol=0)


@pytest.mark.parametrize("scheme", RELATIVE_SCHEMES, ids=RELATIVE_SCHEMES)
def test_relative_schemes_invariant_to_position_shift_in_the_model(scheme: str) -> None:
    model = make_model(scheme)
    x = tokens(3, TRAIN_LENGTH)
    with torch.no_grad():
        base, _ = model(x, positions=torch.arange(TRAIN_LENGTH))
        shifted, _ = model(x, positions=torch.arange(TRAIN_LENGTH) + 37)
    assert_close(shifted, base, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("scheme", ABSOLUTE_SCHEMES, ids=ABSOLUTE_SCHEMES)
def test_absolute_schemes_change_under_position_shift(scheme: str) -> None:
    model = make_model(scheme)
    x = tokens(3, TRAIN_LENGTH)
    with torch.no_grad():
        base, _ = model(x)
        shifted, _ = model(x, positions=torch.arange(TRAIN_LENGTH) + 37)
    assert (shifted - base).abs().max() > 1e-2


@pytest.mark.parametrize("scheme", EVALUATION_SCALED, ids=EVALUATION_SCALED)
def test_evaluation_scaled_schemes_are_relative_in_training_and_not_in_evaluation(scheme: str) -> None:
    model = make_model(scheme)
    x, positions = tokens(3, TRAIN_LENGTH), torch.arange(TRAIN_LENGTH)
    with torch.no_grad():
        evaluated = (model(x, positions=positions)[0] - model(x, positions=positions + 37)[0]).abs().max()
        model.train()  # dropout 0: only the scale differs between the modes
        base, _ = model(x, positions=positions)
        shifted, _ = model(x, positions=positions + 37)
    assert_close(shifted, base, rtol=1e-4, atol=1e-4)
    assert evaluated > 1e-3


@pytest.mark.parametrize("length", [TRAIN_LENGTH, 2 * TRAIN_LENGTH], ids=["train_length", "twice"])
@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_every_scheme_forward_shape_and_finite(scheme: str, length: int) -> None:
    model = make_model(scheme)
    with torch.no_grad():
        logits, attentions = model(tokens(2, length))
    assert logits.shape == (2, length, VOCAB)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()
    assert len(attentions) == MODEL.n_layers and all(a["self"] is None for a in attentions)


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_only_none_is_permutation_equivariant(scheme: str) -> None:
    model = make_model(scheme)
    x = tokens(2, TRAIN_LENGTH)
    perm = torch.randperm(TRAIN_LENGTH, generator=torch.Generator().manual_seed(3))
    assert not torch.equal(perm, torch.arange(TRAIN_LENGTH))
    assert not torch.equal(perm, torch.arange(TRAIN_LENGTH).flip(0))  # reversal fools alibi_sym
    with torch.no_grad():
        logits, _ = model(x)
        permuted, _ = model(x[:, perm])
    if scheme == "none":
        assert_close(permuted, logits[:, perm], rtol=1e-5, atol=1e-5)
    else:
        assert (permuted - logits[:, perm]).abs().max() > 1e-2


@pytest.mark.parametrize("length", [TRAIN_LENGTH, 2 * TRAIN_LENGTH], ids=["train_length", "twice"])
@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_sdpa_path_equals_explicit_weights_path(scheme: str, length: int) -> None:
    model = make_model(scheme)
    x = tokens(2, length)
    with torch.no_grad():
        fast, none_weights = model(x)
        slow, attentions = model(x, need_weights=True)
    assert_close(slow, fast, rtol=1e-5, atol=1e-5)
    assert all(a["self"] is None for a in none_weights)
    for layer in attentions:
        weights = layer["self"]
        assert weights.shape == (2, MODEL.n_heads, length, length)
        assert torch.isfinite(weights).all() and (weights >= 0).all()
        if "sink" in model.encoder.pe.switches:  # the sink takes a share: the real keys' weights sum to less than 1
            assert bool(((weights.sum(-1) < 1) & (weights.sum(-1) > 0)).all())
        else:
            assert_close(weights.sum(-1), torch.ones(2, MODEL.n_heads, length))


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_attention_module_paths_agree_with_masks(scheme: str, causal: bool) -> None:
    """MultiHeadAttention alone, with the scheme's bias combined with a causal and a padding mask."""
    torch.manual_seed(0)
    t, d, h = 10, 32, 4
    pe = build_positional_encoding(scheme, d_model=d, n_heads=h, causal=causal)
    attn = MultiHeadAttention(d, h).eval()
    x = torch.randn(3, t, d)
    pos = torch.arange(t)
    padding = torch.zeros(3, t, dtype=torch.bool)
    # keys 4 and 5 of example 1 are padding; in the middle, so that every one-sided alibi head still
    # sees an unpadded key from every query (at the edges a whole visible side can be padding)
    padding[1, 4:6] = True
    # layer 0's scheme and bias (a layout's differ per layer; every other scheme's layer(0) is itself)
    bias = combine_attention_bias(pe.layer_biases(pos, pos)[0], q_len=t, k_len=t, causal=causal,
                                  key_padding_mask=padding)
    with torch.no_grad():
        fast, _ = attn(x, x, pe=pe.layer(0), q_pos=pos, k_pos=pos, attn_bias=bias)
        slow, weights = attn(x, x, pe=pe.layer(0), q_pos=pos, k_pos=pos, attn_bias=bias, need_weights=True)
    assert_close(slow, fast, rtol=1e-5, atol=1e-5)
    assert_close(weights.sum(-1), torch.ones(3, h, t))
    real = [0, 1, 2, 3, 6, 7, 8, 9]  # padding gets no attention from a real query (a padding query's output is
    assert (weights[1, :, real, 4:6] == 0).all()  # unused: stick-breaking gives it the rest of its own stick)
    if causal:
        assert (weights.triu(1) == 0).all()  # no attention to the future


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_trailing_padding_keeps_every_output_finite(scheme: str) -> None:
    """At trailing padding a right-looking alibi head has no visible unpadded key; the encoder must stay finite
    (a NaN at a padded position would reach every position of the next layer through 0 · NaN)."""
    torch.manual_seed(0)
    t, d, h = 10, 32, 4
    pe = build_positional_encoding(scheme, d_model=d, n_heads=h, n_layers=2)
    encoder = Encoder(pe, n_layers=2, d_ff=64, dropout=0.0).eval()
    x = torch.randn(2, t, d)
    pos = torch.arange(t)
    padding = torch.zeros(2, t, dtype=torch.bool)
    padding[1, -3:] = True
    with torch.no_grad():
        out, attentions = encoder(x, pos, key_padding_mask=padding, need_weights=True)
        unpadded, _ = encoder(x[1:, :-3], pos[:-3])
    assert torch.isfinite(out).all()
    for layer in attentions:
        assert (layer["self"][1, :, :-3, -3:] == 0).all()  # real queries never attend to padding
    # padding is invisible to the real positions: same as running the unpadded sequence alone
    assert_close(out[1, :-3], unpadded[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("profile", ["smoke", "quick", "full"])
def test_copy_t5_buckets_give_every_copy_offset_its_own_bucket(profile, repo_root):
    """The copy task's offsets (output L+1+i reads input i: offset L+1 for L up to max_len) must not share a
    bucket; T5's own 32/128 merged offsets 8-11, so it could not tell the copy offsets of lengths 7-9 apart."""
    from pelab.compose import compose_params
    from pelab.positional.functional import t5_relative_position_bucket
    from pelab.positional.t5 import distinct_up_to

    def buckets(offsets, num_buckets, max_distance):
        return t5_relative_position_bucket(torch.tensor(offsets), bidirectional=True, num_buckets=num_buckets,
                                           max_distance=max_distance).tolist()

    cfg = compose_params(repo_root / "conf", [f"profile={profile}"])
    t5, max_len = cfg["copy"]["positional"]["t5"], cfg["copy"]["data"]["max_len"]
    offsets = list(range(-(max_len + 1), max_len + 2))
    assert len(set(buckets(offsets, **t5))) == len(offsets)
    assert distinct_up_to(**t5) >= max_len + 1
    assert buckets([-8, -9, -10, -11], 32, 128) == [8, 8, 8, 8]  # T5's default: one bucket
    assert distinct_up_to(32, 128) == 7


@pytest.mark.parametrize("d_model", [64, 128, 512])
def test_learned_rows_start_at_the_sinusoidal_row_norm_not_50x_weaker(d_model):
    """Token rows enter scaled to norm ≈ √d; sinusoidal rows have norm √(d/2). The learned table's default
    init starts at the sinusoidal norm; GPT-2's std 0.02 (option init=gpt2) starts ~35× below it."""
    import math

    from pelab.model.embedding import TokenEmbedding

    torch.manual_seed(0)
    learned = build_positional_encoding("learned", d_model=d_model, n_heads=4)
    gpt2 = build_positional_encoding("learned", d_model=d_model, n_heads=4,
                                     options={"max_positions": 128, "init": "gpt2"})
    sinusoidal = sinusoidal_table(torch.arange(128), d_model).norm(dim=1).mean()
    tokens = (TokenEmbedding(100, d_model).weight.detach() * math.sqrt(d_model)).norm(dim=1).mean()
    ratio = float(learned.table.weight.detach().norm(dim=1).mean() / sinusoidal)
    assert 0.9 < ratio < 1.1
    assert 0.6 < float(sinusoidal / tokens) < 0.8  # √(1/2)
    assert float(gpt2.table.weight.detach().norm(dim=1).mean() / sinusoidal) == pytest.approx(0.02 * math.sqrt(2), rel=0.1)
    with pytest.raises(ValueError, match=r"unknown positional.learned.init 'xavier'; valid choices: sinusoidal_norm, gpt2"):
        build_positional_encoding("learned", d_model=d_model, n_heads=4, options={"init": "xavier"})
