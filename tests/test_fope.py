"""FoPE (``pelab.positional.fope``) against its reference (TsinghuaC3I/Fourier-Position-Embedding, ``olmo/model.py``
``FourierEmbedding.apply_rotary_pos_emb`` and ``RotaryEmbedding.get_inv_freq``, transcribed below in its own half-split
layout) and the properties the paper states: the clip at 2π/L, fixed per-layer and per-head coefficients of the init's
spread, RoPE on the kept frequencies at σ = 0, and positions no longer relative at σ > 0."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from pelab.positional import build_positional_encoding, scheme_options
from pelab.positional.fope import kept_frequencies


def reference_rotation(x: torch.Tensor, positions: torch.Tensor, omega: torch.Tensor, cos_coef: torch.Tensor,
                       sin_coef: torch.Tensor) -> torch.Tensor:
    """The reference's forward with ``fourier_ignore_zero`` and separate bases and heads, x (B, H, T, Dh) half-split:
    pos_sin/pos_cos (T, D) of the kept ω; einsum "bhtD, hDd -> bhtd"; F.pad(..., value=1) to Dh/2; cat twice;
    t·cos + rotate_half(t)·sin with rotate_half = cat(−x2, x1)."""
    head_dim = x.shape[-1]
    angles = positions.double()[:, None] * omega.double()[None, :]  # (T, D)
    f_sin = torch.einsum("tD,hDd->htd", angles.sin(), sin_coef.double())
    f_cos = torch.einsum("tD,hDd->htd", angles.cos(), cos_coef.double())
    pad = head_dim // 2 - f_sin.shape[-1]
    f_sin = torch.nn.functional.pad(f_sin, (0, pad), value=1.0)
    f_cos = torch.nn.functional.pad(f_cos, (0, pad), value=1.0)
    f_sin, f_cos = torch.cat([f_sin, f_sin], -1), torch.cat([f_cos, f_cos], -1)  # (H, T, Dh)
    x1, x2 = x.chunk(2, dim=-1)
    return x * f_cos + torch.cat([-x2, x1], -1) * f_sin


def half_split_to_interleaved(head_dim: int) -> torch.Tensor:
    half = head_dim // 2
    return torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).flatten()


@pytest.mark.parametrize(("head_dim", "length"), [(16, 64), (32, 64), (64, 512), (64, 1024)])
def test_logits_are_the_reference_forward_at_distance(head_dim: int, length: int) -> None:
    heads = 4
    pe = build_positional_encoding("fope", d_model=head_dim * heads, n_heads=heads, causal=True, n_layers=2,
                                   options={"max_period": float(length)})
    positions = torch.tensor([0, 1, 5, length - 1, length, 2 * length + 3, 8 * length - 1])
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, heads, len(positions), head_dim, generator=generator, dtype=torch.float64)
    k = torch.randn(2, heads, len(positions), head_dim, generator=generator, dtype=torch.float64)
    index = half_split_to_interleaved(head_dim)
    for i in range(2):
        layer = pe.layer(i)
        q_ref = reference_rotation(q, positions, layer.omega, layer.cos_coef, layer.sin_coef)
        k_ref = reference_rotation(k, positions, layer.omega, layer.cos_coef, layer.sin_coef)
        q_ours, k_ours = layer.rotate(q[..., index], k[..., index], positions, positions)
        # float32 angles in ours (as the reference's tables) against float64 here: 8L·ε rad
        assert_close(q_ours @ k_ours.transpose(-2, -1), q_ref @ k_ref.transpose(-2, -1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(("head_dim", "length", "kept", "slots"), [(64, 512, 16, 16), (64, 1024, 18, 16),
                                                                  (128, 512, 31, 31), (128, 1024, 36, 32)])
def test_the_clip_keeps_the_frequencies_that_turn_within_L_and_the_references_shapes(head_dim, length, kept,
                                                                                   slots) -> None:
    """Counts and coefficient shapes as the reference builds them (its 60M, 180M and 1.2B heads at 512 and 1,024)."""
    omega = kept_frequencies(head_dim, 10000.0, float(length))
    assert len(omega) == kept and omega.min() >= 2 * math.pi / length
    assert 10000.0 ** (-2 * kept / head_dim) < 2 * math.pi / length  # the next one turns less than once
    pe = build_positional_encoding("fope", d_model=head_dim * 8, n_heads=8, n_layers=1,
                                   options={"max_period": float(length)})
    assert pe.layer(0).cos_coef.shape == (8, kept, slots)


def test_coefficients_are_fixed_identity_plus_xavier_noise_per_layer_and_head() -> None:
    heads, head_dim, length, gain = 16, 128, 512, 0.3  # D = d' = 31: the identity, no stride
    pe = build_positional_encoding("fope", d_model=heads * head_dim, n_heads=heads, n_layers=2,
                                   options={"max_period": float(length), "gain": gain})
    assert list(pe.parameters()) == []  # not trained (the paper's Appendix B)
    layers = [pe.layer(i) for i in range(2)]
    coef = layers[0].cos_coef  # (H, D, d')
    kept, slots = coef.shape[1:]
    noise = coef - torch.eye(kept, slots)
    expected_std = gain * math.sqrt(2 / (slots * (kept + heads)))  # torch's fans of an (H, D, d') tensor
    assert noise.std().item() == pytest.approx(expected_std, rel=0.05)
    assert abs(noise.mean().item()) < expected_std / 10
    assert not torch.equal(layers[0].cos_coef, layers[0].sin_coef)  # separate bases
    assert not torch.equal(layers[0].cos_coef, layers[1].cos_coef)  # per layer
    assert not torch.equal(coef[0], coef[1])  # per head


def test_step_identity_when_more_frequencies_survive_than_a_quarter_head() -> None:
    pe = build_positional_encoding("fope", d_model=64 * 8, n_heads=8, options={"max_period": 1024.0, "gain": 0.0})
    coef = pe.layer(0).cos_coef[0]  # (18, 16): stride 2
    expected = torch.zeros(18, 16)
    for i in range(16):
        if 2 * i < 18:
            expected[2 * i, i] = 1.0
    assert torch.equal(coef, expected)
    omega = pe.layer(0).omega
    assert_close(pe.rotation_frequencies()[:9], omega[0:18:2])


def test_at_zero_gain_it_is_rope_on_the_kept_pairs_and_a_fixed_turn_on_the_rest() -> None:
    """σ = 0, D ≤ d/4: the kept pairs rotate as HoPE (RoPE with the same clip), the padded ones by cos = sin = 1."""
    head_dim, heads, length = 32, 2, 64
    fope = build_positional_encoding("fope", d_model=head_dim * heads, n_heads=heads, causal=True,
                                     options={"max_period": float(length), "gain": 0.0}).layer(0)
    hope = build_positional_encoding("hope", d_model=head_dim * heads, n_heads=heads, causal=True,
                                     options={"max_period": float(length)})
    kept = len(fope.omega)
    assert kept == 5 and fope.cos_coef.shape[-1] == kept  # ω_i ≥ 2π/64 for i < 5; d/4 = 8 slots
    positions = torch.arange(3 * length)
    x = torch.randn(1, heads, len(positions), head_dim, generator=torch.Generator().manual_seed(1))
    ours, _ = fope.rotate(x, x, positions, positions)
    rope, _ = hope.rotate(x, x, positions, positions)
    assert_close(ours[..., :2 * kept], rope[..., :2 * kept], rtol=1e-5, atol=1e-5)
    even, odd = x[..., 2 * kept::2], x[..., 2 * kept + 1::2]
    assert_close(ours[..., 2 * kept::2], even - odd)
    assert_close(ours[..., 2 * kept + 1::2], odd + even)


@pytest.mark.parametrize(("gain", "relative"), [(0.0, True), (0.3, False)])
def test_logits_are_a_function_of_the_offset_only_without_the_series_noise(gain: float, relative: bool) -> None:
    head_dim, heads = 16, 2
    layer = build_positional_encoding("fope", d_model=head_dim * heads, n_heads=heads, causal=True,
                                      options={"gain": gain}).layer(0)
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(1, heads, 1, head_dim, generator=generator, dtype=torch.float64)
    k = torch.randn(1, heads, 1, head_dim, generator=generator, dtype=torch.float64)

    def logit(i: int, j: int) -> torch.Tensor:
        qr, kr = layer.rotate(q, k, torch.tensor([i]), torch.tensor([j]))
        return (qr * kr).sum(-1)

    gap = (logit(10, 3) - logit(40, 33)).abs().max().item()
    assert (gap < 1e-4) == relative, gap


@pytest.mark.parametrize(("options", "message"), [
    ({"max_period": 3.0}, r"^positional.fope.max_period must be >= 2π"),
    ({"gain": -0.1}, r"^positional.fope.gain must be >= 0, got -0.1$"),
    ({"sigma": 0.3}, r"^unknown option\(s\) \['sigma'\] in positional.fope; valid options: base, gain, max_period$"),
])
def test_bad_options_are_one_line(options, message) -> None:
    with pytest.raises(ValueError, match=message):
        scheme_options("fope", options)
