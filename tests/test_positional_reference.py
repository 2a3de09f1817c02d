"""Our positional functions against trusted reference code (HF transformers), as litgpt tests its RoPE.

transformers is used only for its Python functions: no model is downloaded (offline is forced below).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
from torch.testing import assert_close

pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402
from transformers.models.llama.modeling_llama import (  # noqa: E402
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
    rotate_half,
)
from transformers.models.t5.modeling_t5 import T5Attention  # noqa: E402

from pelab.positional.functional import (  # noqa: E402
    alibi_slopes,
    rope_angles,
    rope_rotate,
    rope_rotation_matrices,
    t5_relative_position_bucket,
)
from pelab.positional.rope import RotaryPositionalEncoding  # noqa: E402


def interleaved_to_half_split(head_dim: int) -> torch.Tensor:
    """Index permutation taking our pairs (x_2i, x_2i+1) to HF llama's pairs (x_i, x_{i+Dh/2})."""
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))


def hf_cos_sin(positions: torch.Tensor, head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin as LlamaRotaryEmbedding computes them, from a small config built locally."""
    config = LlamaConfig(
        hidden_size=2 * head_dim,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    assert config.head_dim == head_dim
    rotary = LlamaRotaryEmbedding(config)
    dummy = torch.zeros(1, positions.shape[0], head_dim)
    cos, sin = rotary(dummy, positions[None])  # (1, T, Dh), half-split layout
    return cos, sin


@pytest.mark.parametrize("head_dim", [2, 8, 16, 64])
@pytest.mark.parametrize("base", [10000.0, 500.0])
def test_rope_rotate_matches_hf_llama(head_dim: int, base: float) -> None:
    torch.manual_seed(0)
    t = 37
    positions = torch.arange(t)
    q = torch.randn(2, 3, t, head_dim)  # (B, H, T, Dh), our interleaved layout
    k = torch.randn(2, 3, t, head_dim)
    cos, sin = hf_cos_sin(positions, head_dim, base)
    perm = interleaved_to_half_split(head_dim)

    ours_q = rope_rotate(q, rope_angles(positions, head_dim, base))
    ours_k = rope_rotate(k, rope_angles(positions, head_dim, base))
    hf_q, hf_k = apply_rotary_pos_emb(q[..., perm], k[..., perm], cos, sin, unsqueeze_dim=1)

    assert_close(ours_q[..., perm], hf_q, rtol=1e-5, atol=1e-5)
    assert_close(ours_k[..., perm], hf_k, rtol=1e-5, atol=1e-5)


def test_rope_rotate_matches_hf_rotate_half_with_shared_inv_freq() -> None:
    """Build HF's cos/sin by hand from our own inv_freq: then the two agree to float64 precision."""
    torch.manual_seed(1)
    head_dim, base = 32, 10000.0
    positions = torch.arange(50, dtype=torch.float64)
    angles = rope_angles(positions, head_dim, base)  # (T, Dh/2), float64
    emb = torch.cat((angles, angles), dim=-1)  # (T, Dh): HF's half-split duplication
    x = torch.randn(4, 50, head_dim, dtype=torch.float64)
    perm = interleaved_to_half_split(head_dim)

    hf = x[..., perm] * emb.cos() + rotate_half(x[..., perm]) * emb.sin()
    assert_close(rope_rotate(x, angles)[..., perm], hf, rtol=0, atol=1e-12)


def test_rope_module_rotate_matches_hf_llama() -> None:
    torch.manual_seed(2)
    b, h, t, head_dim = 2, 4, 23, 16
    pe = RotaryPositionalEncoding(d_model=h * head_dim, n_heads=h, base=10000.0)
    q, k = torch.randn(b, h, t, head_dim), torch.randn(b, h, t + 5, head_dim)  # (B, H, T, Dh)
    q_pos, k_pos = torch.arange(t) + 3, torch.arange(t + 5)
    ours_q, ours_k = pe.rotate(q, k, q_pos, k_pos)
    assert ours_q.shape == q.shape and ours_k.shape == k.shape
    assert ours_q.dtype == q.dtype and ours_k.dtype == k.dtype

    perm = interleaved_to_half_split(head_dim)
    cos_q, sin_q = hf_cos_sin(q_pos, head_dim, 10000.0)
    cos_k, sin_k = hf_cos_sin(k_pos, head_dim, 10000.0)
    hf_q, _ = apply_rotary_pos_emb(q[..., perm], q[..., perm], cos_q, sin_q)
    hf_k, _ = apply_rotary_pos_emb(k[..., perm], k[..., perm], cos_k, sin_k)
    assert_close(ours_q[..., perm], hf_q, rtol=1e-5, atol=1e-5)
    assert_close(ours_k[..., perm], hf_k, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("head_dim", [2, 6, 16])
def test_rope_fast_form_equals_block_rotation_matrices(head_dim: int) -> None:
    torch.manual_seed(3)
    positions = torch.arange(0, 60, 3, dtype=torch.float64)
    angles = rope_angles(positions, head_dim, 100.0)  # (T, Dh/2)
    x = torch.randn(2, 5, positions.shape[0], head_dim, dtype=torch.float64)  # (B, H, T, Dh)
    mats = rope_rotation_matrices(angles)  # (T, Dh, Dh)
    explicit = (mats @ x[..., None]).squeeze(-1)  # R_t @ x_t
    assert_close(rope_rotate(x, angles), explicit, rtol=0, atol=1e-12)
    # each R_t is a rotation: orthogonal with determinant 1
    eye = torch.eye(head_dim, dtype=torch.float64).expand_as(mats)
    assert_close(mats @ mats.transpose(-1, -2), eye, rtol=0, atol=1e-12)
    assert_close(torch.linalg.det(mats), torch.ones(positions.shape[0], dtype=torch.float64), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 6, 8, 12, 16])
def test_alibi_slopes_match_hf_bloom(n_heads: int) -> None:
    seq_len = 5
    alibi = build_alibi_tensor(torch.ones(1, seq_len, dtype=torch.long), n_heads, torch.float32)
    assert alibi.shape == (n_heads, 1, seq_len)  # (B*H, 1, T)
    hf_slopes = alibi[:, 0, 1]  # position 1 times the slope
    # the whole row is slope * position
    assert_close(alibi[:, 0, :], hf_slopes[:, None] * torch.arange(seq_len, dtype=torch.float32))

    ours = alibi_slopes(n_heads)
    assert ours.shape == (n_heads,) and ours.dtype == torch.float32
    assert_close(ours, hf_slopes, rtol=1e-6, atol=0)


def test_alibi_slopes_power_of_two_formula() -> None:
    """Press et al. §3: for 8 heads the slopes are 1/2, 1/4, ..., 1/256."""
    assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(h + 1) for h in range(8)]))


@pytest.mark.parametrize("bidirectional", [True, False], ids=["bidirectional", "causal"])
@pytest.mark.parametrize(("num_buckets", "max_distance"), [(32, 128), (8, 16), (16, 64), (64, 256), (4, 8)])
def test_t5_buckets_match_hf(bidirectional: bool, num_buckets: int, max_distance: int) -> None:
    relative = torch.arange(-300, 301)
    ours = t5_relative_position_bucket(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    hf = T5Attention._relative_position_bucket(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    torch.testing.assert_close(ours, hf, rtol=0, atol=0)
    assert int(ours.min()) >= 0 and int(ours.max()) < num_buckets


def test_t5_buckets_match_hf_on_a_position_grid() -> None:
    """The (Tq, Tk) matrix the T5 scheme actually builds, against HF's compute_bias layout."""
    q_pos, k_pos = torch.arange(40), torch.arange(40)
    relative = k_pos[None, :] - q_pos[:, None]  # memory_position - query_position, as in HF
    import inspect

    from pelab.positional.t5 import T5Options

    hf_defaults = inspect.signature(T5Attention._relative_position_bucket).parameters
    sizes = {"num_buckets": T5Options().num_buckets, "max_distance": T5Options().max_distance}
    assert sizes == {k: hf_defaults[k].default for k in sizes}  # the scheme's defaults are T5's own
    ours = t5_relative_position_bucket(relative, bidirectional=True, **sizes)
    hf = T5Attention._relative_position_bucket(relative, bidirectional=True)
    assert_close(ours, hf, rtol=0, atol=0)


@pytest.mark.parametrize("interpolation, rescale", [(1.0, 1.0), (4.0, 1.0), (1.0, 4.0), (2.5, 3.0)])
def test_rope_extensions_match_x_transformers_rotary(interpolation: float, rescale: float) -> None:
    """Position interpolation and NTK-aware scaling as options of ``rope`` give x-transformers' RotaryEmbedding
    angles (its ``interpolation_factor`` divides positions, its ``base_rescale_factor`` s scales the base by
    s^(d/(d-2)))."""
    from x_transformers.x_transformers import RotaryEmbedding

    from pelab.positional import build_positional_encoding

    head_dim, length = 16, 40
    ours = build_positional_encoding("rope", d_model=4 * head_dim, n_heads=4).extended(
        interpolation_factor=interpolation, base_rescale_factor=rescale)
    theirs = RotaryEmbedding(head_dim, interpolation_factor=interpolation, base_rescale_factor=rescale)
    freqs, _ = theirs.forward_from_seq_len(length)  # (T, Dh): each angle repeated for its pair
    torch.testing.assert_close(ours.angles(torch.arange(length)), freqs[..., ::2].reshape(length, -1),
                               rtol=1e-5, atol=1e-5)
