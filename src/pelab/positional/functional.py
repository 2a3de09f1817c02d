"""Pure functions behind the schemes: tables, rotations, slopes and buckets.

Kept free of nn.Module state so tests can check them against the math and against
reference implementations (HF transformers) directly.
"""

from __future__ import annotations

import math

import torch


def sinusoidal_table(positions: torch.Tensor, dim: int, base: float = 10000.0) -> torch.Tensor:
    """Vaswani et al. 2017, §3.5 (https://arxiv.org/abs/1706.03762):

        PE(t, 2i) = sin(t · base^(-2i/d)),   PE(t, 2i+1) = cos(t · base^(-2i/d)).

    positions: (T,) -> (T, dim), in the dtype of float64 if positions is float64 else float32.
    Every row has norm sqrt(dim / 2) (sin² + cos² = 1 per pair).
    """
    if dim % 2:
        raise ValueError(f"sinusoidal encoding needs an even dimension, got d_model={dim}")
    dtype = positions.dtype if positions.is_floating_point() else torch.float32
    inv_freq = base ** (-torch.arange(0, dim, 2, dtype=dtype, device=positions.device) / dim)
    angles = positions.to(dtype)[:, None] * inv_freq[None, :]  # (T, dim/2)
    # sin at even dimensions, cos at odd ones; out of place, so that it runs under vmap with per-seed positions
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)  # (T, dim)


def rope_angles(positions: torch.Tensor, head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer (https://arxiv.org/abs/2104.09864), eq. 15: θ_i = base^(-2(i-1)/d), angle = t·θ_i.

    positions: (T,) -> angles (T, head_dim/2) in float32 (float64 if positions are float64).
    """
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=dtype, device=positions.device) / head_dim)
    return positions.to(dtype)[:, None] * inv_freq[None, :]


def rope_rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each adjacent pair (x_2i, x_2i+1) by its angle: the elementwise form of RoFormer eq. 34,

        RoPE(x)_2i   = x_2i · cos − x_2i+1 · sin
        RoPE(x)_2i+1 = x_2i+1 · cos + x_2i · sin

    x: (..., T, Dh); angles: (T, Dh/2). Returns a tensor shaped and typed like x.
    """
    cos = angles.cos().repeat_interleave(2, dim=-1).to(x.dtype)  # (T, Dh)
    sin = angles.sin().repeat_interleave(2, dim=-1).to(x.dtype)  # (T, Dh)
    pairs = x.unflatten(-1, (-1, 2))  # (..., T, Dh/2, 2)
    rotated_half = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)  # (..., T, Dh)
    return x * cos + rotated_half * sin


def rope_rotation_matrices(angles: torch.Tensor) -> torch.Tensor:
    """The explicit block-diagonal rotation matrices R_t of RoFormer eq. 13 (slow; for tests and figures).

    angles: (T, Dh/2) -> (T, Dh, Dh), with R_t @ x equal to ``rope_rotate`` of x at position t.
    """
    t, half = angles.shape
    cos, sin = angles.cos(), angles.sin()
    mats = torch.zeros(t, 2 * half, 2 * half, dtype=angles.dtype, device=angles.device)
    idx = torch.arange(half, device=angles.device)
    mats[:, 2 * idx, 2 * idx] = cos
    mats[:, 2 * idx, 2 * idx + 1] = -sin
    mats[:, 2 * idx + 1, 2 * idx] = sin
    mats[:, 2 * idx + 1, 2 * idx + 1] = cos
    return mats


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Head slopes of ALiBi (Press et al. 2022, §3, https://arxiv.org/abs/2108.12409).

    For n a power of two: m_h = 2^(-8h/n), h = 1..n. Otherwise the slopes of the closest
    lower power of two, then every other slope of the next power of two, as in the authors'
    code (https://github.com/ofirpress/attention_with_linear_biases, models/transformer.py)
    and HF bloom's ``build_alibi_tensor``. Returns (n_heads,) float32.
    """
    if n_heads < 1:
        raise ValueError(f"ALiBi needs at least one head, got n_heads={n_heads}")

    def power_of_two_slopes(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = power_of_two_slopes(closest)
    if closest != n_heads:
        slopes += power_of_two_slopes(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


def right_looking_heads(n_heads: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(H, 1, 1) bool: the heads that watch keys to the right of the query in a bidirectional encoder, the odd ones
    (pelab's convention for a one-sided scheme, ``alibi``'s: the even heads watch the left)."""
    return (torch.arange(n_heads, device=device) % 2 == 1)[:, None, None]


def relative_distances(q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
    """k_pos − q_pos for every (query, key) pair: (Tq,) × (Tk,) -> (Tq, Tk), integer."""
    return k_pos[None, :] - q_pos[:, None]


def t5_relative_position_bucket(
    relative_position: torch.Tensor,
    *,
    bidirectional: bool,
    num_buckets: int,
    max_distance: int,
) -> torch.Tensor:
    """Bucket of each relative position (key − query), as in T5 (Raffel et al. 2020,
    https://arxiv.org/abs/1910.10683, and mesh-tensorflow's ``_relative_position_bucket``).

    Half the buckets (or all, if unidirectional) hold exact offsets 0..max_exact-1; the rest
    grow logarithmically up to ``max_distance``, beyond which everything shares the last
    bucket. Bidirectional: keys to the right use the upper half of the buckets.
    Unidirectional (causal): keys to the right all fall in bucket 0 (they are masked anyway).
    """
    bucket = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    # log-spaced buckets for max_exact <= distance < max_distance
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + (log_ratio * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return bucket + torch.where(is_small, distance, large)
