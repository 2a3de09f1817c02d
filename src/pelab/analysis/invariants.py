"""Two invariants the references state, measured.

* Every sinusoidal row has norm √(d/2): each (sin, cos) pair contributes sin² + cos² = 1
  (../references/notes-on-positional-encoding.md).
* RoPE scores depend on the offset only: ⟨R_m q, R_n k⟩ = g(q, k, n − m)
  (RoFormer eq. 16, https://arxiv.org/abs/2104.09864; ../references/sinusoidal-and-rotary-encodings.md).
"""

from __future__ import annotations

import math

import torch

from pelab.positional.functional import rope_angles, rope_rotate, sinusoidal_table

def sinusoidal_row_norms(
    length: int, dim: int, base: float = 10000.0, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """‖PE(t)‖ for t = 0..length−1: (length,)."""
    return sinusoidal_table(torch.arange(length, dtype=dtype), dim, base).norm(dim=1)


def sinusoidal_norm_deviation(
    length: int, dim: int, base: float = 10000.0, dtype: torch.dtype = torch.float64
) -> float:
    """max_t |‖PE(t)‖ − √(d/2)|."""
    return float((sinusoidal_row_norms(length, dim, base, dtype) - math.sqrt(dim / 2)).abs().max())


def rope_score_matrix(q: torch.Tensor, k: torch.Tensor, length: int, base: float = 10000.0) -> torch.Tensor:
    """S[m, n] = ⟨RoPE(q, m), RoPE(k, n)⟩ for one fixed query and key vector placed at every position.

    q, k: (Dh,) -> (length, length), in the dtype of q.
    """
    positions = torch.arange(length, dtype=q.dtype if q.dtype == torch.float64 else torch.float32)
    angles = rope_angles(positions, q.shape[-1], base)  # (T, Dh/2)
    rq = rope_rotate(q.expand(length, -1), angles)  # (T, Dh)
    rk = rope_rotate(k.expand(length, -1), angles)  # (T, Dh)
    return rq @ rk.T


def diagonal_spread(matrix: torch.Tensor) -> torch.Tensor:
    """max − min of every diagonal of a square matrix (offset n − m from −(T−1) to T−1): (2T−1,).

    Zero everywhere exactly when the matrix is Toeplitz, i.e. its entries depend on n − m only.
    """
    t = matrix.shape[0]
    spreads = []
    for offset in range(-(t - 1), t):
        diagonal = matrix.diagonal(offset)
        spreads.append(diagonal.max() - diagonal.min())
    return torch.stack(spreads)


def rope_relative_deviation(
    length: int,
    head_dim: int,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float64,
    seed: int = 0,
    n_pairs: int = 8,
) -> float:
    """max over random (q, k) pairs and offsets of the spread of ⟨R_m q, R_n k⟩ along n − m = const,
    relative to the largest |score| (so the number is comparable across dtypes and scales)."""
    gen = torch.Generator().manual_seed(seed)
    worst = 0.0
    for _ in range(n_pairs):
        q = torch.randn(head_dim, generator=gen, dtype=torch.float64).to(dtype)
        k = torch.randn(head_dim, generator=gen, dtype=torch.float64).to(dtype)
        scores = rope_score_matrix(q, k, length, base)
        worst = max(worst, float(diagonal_spread(scores).max() / scores.abs().max()))
    return worst
