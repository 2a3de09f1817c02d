"""The linear shift property of the sinusoidal table: PE(t + φ) = M(φ) · PE(t).

Computed the four ways of the linear-shift notebook (../references/sinusoidal-linear-shift-notebook.md,
after Vaswani et al. 2017 §3.5 and
https://timodenk.com/blog/linear-relationships-in-the-transformers-positional-encoding/):

1. per-pair loop: a 2×2 rotation M(k, φ) per frequency k, applied pair by pair;
2. block matrix: one d×d block-diagonal M(φ) applied to every row;
3. vectorised pairs: rows packed as (d/2, 2) [sin, cos] and combined with two (2, d/2) coefficient matrices;
4. swap-and-scale: PE(t+φ) = a ⊙ PE(t) + b ⊙ swap(PE(t)), swap exchanging each even/odd pair.

The table's layout is ours (``functional.sinusoidal_table``): column 2k holds sin(w_k t), column 2k+1
cos(w_k t), w_k = base^(−2k/d). With that layout M(k, φ) = [[cos w_kφ, sin w_kφ], [−sin w_kφ, cos w_kφ]].
"""

from __future__ import annotations

import torch

from pelab.positional.functional import sinusoidal_table

SHIFT_WAYS = ("per-pair loop", "block matrix", "vectorised pairs", "swap and scale")


def frequencies(dim: int, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """w_k = base^(−2k/d), k = 0..d/2−1: (d/2,)."""
    return base ** (-torch.arange(0, dim, 2, dtype=dtype) / dim)


def pair_rotation(w_k: torch.Tensor, phi: float) -> torch.Tensor:
    """M(k, φ) for one frequency: (2, 2), mapping [sin w t, cos w t] to [sin w(t+φ), cos w(t+φ)]."""
    c, s = torch.cos(w_k * phi), torch.sin(w_k * phi)
    return torch.stack([torch.stack([c, s]), torch.stack([-s, c])])


def shift_matrix(dim: int, phi: float, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The block-diagonal M(φ): (d, d), blocks M(k, φ) on the diagonal, so PE(t+φ) = M(φ) @ PE(t)."""
    w = frequencies(dim, base, dtype)
    c, s = torch.cos(w * phi), torch.sin(w * phi)
    m = torch.zeros(dim, dim, dtype=dtype)
    k = torch.arange(dim // 2)
    m[2 * k, 2 * k], m[2 * k, 2 * k + 1] = c, s
    m[2 * k + 1, 2 * k], m[2 * k + 1, 2 * k + 1] = -s, c
    return m


def shift_per_pair_loop(table: torch.Tensor, phi: float, base: float = 10000.0) -> torch.Tensor:
    """Way 1: loop over the d/2 frequency pairs, rotating each pair of columns by its own M(k, φ)."""
    w = frequencies(table.shape[1], base, table.dtype)
    out = torch.empty_like(table)
    for k in range(table.shape[1] // 2):
        pair = table[:, 2 * k : 2 * k + 2]  # (T, 2): [sin, cos]
        m = pair_rotation(w[k], phi)  # (2, 2)
        # pair @ m.T written out (column j = sin·m[j, 0] + cos·m[j, 1]): elementwise, no BLAS call on a strided view
        out[:, 2 * k : 2 * k + 2] = pair[:, :1] * m[:, 0] + pair[:, 1:] * m[:, 1]
    return out


def shift_block_matrix(table: torch.Tensor, phi: float, base: float = 10000.0) -> torch.Tensor:
    """Way 2: every row times the d×d block-diagonal M(φ)."""
    return table @ shift_matrix(table.shape[1], phi, base, table.dtype).T  # (T, d)


def shift_vectorised_pairs(table: torch.Tensor, phi: float, base: float = 10000.0) -> torch.Tensor:
    """Way 3: pack rows as (T, d/2, 2) [sin, cos]; new sin = Σ M1 ⊙ packed, new cos = Σ M2 ⊙ packed."""
    w = frequencies(table.shape[1], base, table.dtype)
    c, s = torch.cos(w * phi), torch.sin(w * phi)
    m1 = torch.stack([c, s], dim=-1)  # (d/2, 2): sin(a+b) = sin a cos b + cos a sin b
    m2 = torch.stack([-s, c], dim=-1)  # (d/2, 2): cos(a+b) = −sin a sin b + cos a cos b
    packed = table.unflatten(1, (-1, 2))  # (T, d/2, 2)
    out = torch.stack([(packed * m1).sum(-1), (packed * m2).sum(-1)], dim=-1)  # (T, d/2, 2)
    return out.flatten(1)


def shift_swap_and_scale(table: torch.Tensor, phi: float, base: float = 10000.0) -> torch.Tensor:
    """Way 4: a ⊙ PE(t) + b ⊙ swap(PE(t)), a = (cos, cos, …), b = (sin, −sin, …) per pair."""
    w = frequencies(table.shape[1], base, table.dtype)
    a = torch.cos(w * phi).repeat_interleave(2)  # (d,)
    b = torch.stack([torch.sin(w * phi), -torch.sin(w * phi)], dim=-1).flatten()  # (d,)
    swapped = table.unflatten(1, (-1, 2)).flip(-1).flatten(1)  # (T, d): each (even, odd) pair exchanged
    return a * table + b * swapped


SHIFT_FUNCTIONS = dict(
    zip(SHIFT_WAYS, (shift_per_pair_loop, shift_block_matrix, shift_vectorised_pairs, shift_swap_and_scale))
)


def shift_errors(
    length: int, dim: int, phi: int, base: float = 10000.0, dtype: torch.dtype = torch.float64
) -> dict[str, float]:
    """max_t,i |way(PE)(t)_i − PE(t + φ)_i| for each way, against the directly computed shifted table."""
    positions = torch.arange(length, dtype=dtype)
    table = sinusoidal_table(positions, dim, base)  # (T, d)
    target = sinusoidal_table(positions + phi, dim, base)  # (T, d)
    return {way: float((fn(table, phi, base) - target).abs().max()) for way, fn in SHIFT_FUNCTIONS.items()}
