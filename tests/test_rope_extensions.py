"""RoPE's evaluation-time extensions (``pelab.positional.rope_extensions``) against Hugging Face ``transformers``'
own functions (``modeling_rope_utils.ROPE_INIT_FUNCTIONS``) and its Llama rotary module: inverse frequencies and
attention factor to 1e-6, and the rotated queries and keys. transformers is used only for its Python functions: no
model is downloaded."""

from __future__ import annotations

import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
from torch.testing import assert_close

pytest.importorskip("transformers")
from test_positional_reference import interleaved_to_half_split  # noqa: E402
from transformers import LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402

from pelab.positional.rope import RotaryPositionalEncoding  # noqa: E402
from pelab.positional.rope_extensions import (  # noqa: E402
    MENU,
    ROPE_TYPES,
    extend,
    scaled_inverse_frequencies,
)


def hf_config(rope_type: str, head_dim: int, base: float, factor: float, trained: int) -> LlamaConfig:
    """A config as a user writes it for ``rope_type`` (HF's defaults for every option pelab leaves at its
    default: yarn's beta_fast 32 / beta_slow 1, llama3's low 1 / high 4 frequency factors)."""
    parameters = {"rope_type": rope_type, "rope_theta": base, "factor": factor}
    if rope_type == "yarn":
        parameters["original_max_position_embeddings"] = trained
    if rope_type == "llama3":
        parameters.update(low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=trained)
    return LlamaConfig(hidden_size=2 * head_dim, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=trained, rope_parameters=parameters)


CASES = [(rope_type, head_dim, base, factor, trained, length)
         for rope_type in ROPE_TYPES
         for head_dim, base in ((16, 10000.0), (64, 10000.0), (32, 500.0))
         for factor, trained, length in ((1.0, 64, 64), (4.0, 64, 256), (8.0, 256, 1024), (2.5, 40, 70),
                                         (4.0, 64, 32))]


@pytest.mark.parametrize("rope_type,head_dim,base,factor,trained,length", CASES)
def test_inverse_frequencies_and_attention_factor_equal_hf(rope_type, head_dim, base, factor, trained, length):
    config = hf_config(rope_type, head_dim, base, factor, trained)
    hf_theta, hf_factor = ROPE_INIT_FUNCTIONS[rope_type](config, torch.device("cpu"), seq_len=length)
    theta, attention_factor = scaled_inverse_frequencies(rope_type, head_dim, base, factor, trained, length)
    assert theta.shape == hf_theta.shape == (head_dim // 2,)
    assert_close(theta.float(), hf_theta.float(), rtol=1e-6, atol=0)
    assert attention_factor == pytest.approx(hf_factor, rel=1e-6, abs=1e-6)


def test_each_extension_does_what_its_paper_says():
    head_dim, base, trained = 32, 10000.0, 64
    theta, _ = scaled_inverse_frequencies("linear", head_dim, base, 1.0, trained, trained)  # the trained θ
    linear, _ = scaled_inverse_frequencies("linear", head_dim, base, 4.0, trained, 256)
    assert_close(linear, theta / 4)  # PI: every angle of a 4L row inside the trained range
    ntk, _ = scaled_inverse_frequencies("dynamic", head_dim, base, 1.0, trained, 256)
    assert_close(ntk[0], theta[0])  # NTK-aware: the fastest pair kept, the slowest interpolated by exactly s
    assert_close(ntk[-1], theta[-1] / 4, rtol=1e-9, atol=0)
    within, _ = scaled_inverse_frequencies("dynamic", head_dim, base, 8.0, trained, trained)
    assert_close(within, theta)  # dynamic: the trained model on rows of at most L
    long_trained = 4096  # YaRN's own L: pairs on both sides of the ramp (at L = 64 no pair turns 32 times)
    long_theta, _ = scaled_inverse_frequencies("linear", head_dim, base, 1.0, long_trained, long_trained)
    yarn, m = scaled_inverse_frequencies("yarn", head_dim, base, 4.0, long_trained, 4 * long_trained)
    turns = long_trained * long_theta / (2 * math.pi)  # rotations over L tokens
    fast, slow = turns > 32, turns < 1
    assert fast.sum() >= 3 and slow.sum() >= 2
    assert_close(yarn[fast], long_theta[fast])  # fast pairs kept
    assert_close(yarn[slow], long_theta[slow] / 4)  # slow pairs interpolated
    assert ((yarn <= long_theta) & (yarn >= long_theta / 4)).all()  # the ramp between
    assert m == pytest.approx(0.1 * math.log(4) + 1)
    llama3, _ = scaled_inverse_frequencies("llama3", head_dim, base, 4.0, trained, 256)
    wavelength = 2 * math.pi / theta
    assert_close(llama3[wavelength < trained / 4], theta[wavelength < trained / 4])
    assert_close(llama3[wavelength > trained], theta[wavelength > trained] / 4)


@pytest.mark.parametrize("rope_type,factor", [("linear", 4.0), ("dynamic", 2.0), ("yarn", 4.0), ("llama3", 8.0)])
def test_the_extended_module_rotates_as_hf_llama_rotary_embedding(rope_type, factor):
    """Our module at a row of T tokens against LlamaRotaryEmbedding called on positions 0..T-1 (dynamic updates
    its frequencies to the longest position it is given), then HF's apply_rotary_pos_emb: the same rotated and
    scaled queries and keys, up to the layout's permutation."""
    torch.manual_seed(0)
    b, h, head_dim, trained, length = 2, 3, 16, 32, 96
    pe = RotaryPositionalEncoding(d_model=h * head_dim, n_heads=h, base=10000.0, causal=True)
    ours = extend(pe, rope_type, factor, trained, length)
    q, k = torch.randn(b, h, length, head_dim), torch.randn(b, h, length, head_dim)  # (B, H, T, Dh)
    positions = torch.arange(length)
    ours_q, ours_k = ours.rotate(q, k, positions, positions)

    rotary = LlamaRotaryEmbedding(hf_config(rope_type, head_dim, 10000.0, factor, trained))
    cos, sin = rotary(torch.zeros(1, length, head_dim), positions[None])  # (1, T, Dh), half-split layout
    perm = interleaved_to_half_split(head_dim)
    hf_q, hf_k = apply_rotary_pos_emb(q[..., perm], k[..., perm], cos, sin, unsqueeze_dim=1)
    assert_close(ours_q[..., perm], hf_q, rtol=1e-4, atol=1e-4)
    assert_close(ours_k[..., perm], hf_k, rtol=1e-4, atol=1e-4)
    assert torch.equal(pe.rotate(q, k, positions, positions)[0], RotaryPositionalEncoding(
        d_model=h * head_dim, n_heads=h, base=10000.0, causal=True).rotate(q, k, positions, positions)[0])


def test_the_menu_s_per_length_variants_are_pelab_s_pi_and_ntk():
    """``rope+PI`` and ``rope+NTK`` are the trained module's own extensions at s = T/L (``RotaryPositionalEncoding
    .extended``): the same angles; the fixed-factor variants take the longest row over L."""
    pe = RotaryPositionalEncoding(d_model=32, n_heads=2, base=10000.0)
    positions = torch.arange(80)
    menu = {variant.label: variant for variant in MENU}
    for label, option in (("PI", "interpolation_factor"), ("NTK", "base_rescale_factor")):
        ours = menu[label].module(pe, length=80, trained_length=20, longest=200)
        assert_close(ours.angles(positions), pe.extended(**{option: 4.0}).angles(positions), rtol=1e-5, atol=1e-5)
    assert [menu[name].factor(80, 20, 200) for name in ("dynamic", "yarn", "llama3")] == [10.0] * 3
    assert {v.label for v in MENU if v.identity_within} == {"PI", "NTK", "dynamic"}
    with pytest.raises(ValueError, match="unknown RoPE extension 'longrope'; valid choices: linear, dynamic"):
        scaled_inverse_frequencies("longrope", 16, 10000.0, 2.0, 64, 128)
