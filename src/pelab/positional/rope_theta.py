"""RoPE's base θ as an axis of the length and LM studies: ``rope`` trained at other bases (``rope`` itself is
θ = 10⁴), and the two bounds that say how far a base can read, for a head of d dimensions and a length T:

* **every pair turns within T** (Liu et al. 2024, "Scaling laws of RoPE-based extrapolation", ICLR,
  https://arxiv.org/abs/2310.05209, §3.2–3.3): pair i has period 2π·θ^(2i/d); the pairs whose period exceeds the
  training length never see a full turn in training, and past their "critical dimension" a model meets angles it
  never saw. Every pair turns within T when θ ≤ (T/2π)^(d/(d−2)) (``periodic_bound``, exact for the slowest pair;
  the paper's large-d form is T/2π): the regime in which the paper finds extrapolation beyond the training length.
* **reading T needs θ ≥ B(T)** (Men et al. 2024, "Base of RoPE bounds context length", NeurIPS,
  https://arxiv.org/abs/2405.14591, §4, eq. 10–11): a model can tell a similar token from a random one at distance m
  only while B(m) = Σ_i cos(m·θ_i) ≥ 0; the smallest θ with B(m) ≥ 0 for every m ≤ T is the lower bound
  (``retrieval_bound``; for d = 128 it gives 4.2e3 at T = 1k and 2.9e4 at 4k, the paper's Figure 1 values).

The grid (``rope_theta10``, ``rope_theta100``, ``rope_theta1k``, ``rope_theta1m``: specs of ``rope`` in
``schemes.yaml``; RoPE states its base against both bounds wherever it is not 10⁴, ``RotaryPositionalEncoding.describe``) straddles both for the full profile's heads and lengths: the LM (d = 64, L = 256: every
pair turns within L for θ ≤ 46; reading L needs θ ≥ 1.4e3, 8L θ ≥ 3.1e4) and the length study (d = 32, rows of up to
41 tokens in training and 161 at 4N: θ ≤ 7.4; θ ≥ 220 and 1.7e3).
"""

from __future__ import annotations

import functools
import math
import torch



def periodic_bound(head_dim: int, length: int) -> float:
    """The largest θ for which every pair of a d-dimensional head turns fully within ``length`` positions."""
    return (length / (2 * math.pi)) ** (head_dim / (head_dim - 2))


def long_term_decay(base: float, head_dim: int, length: int) -> torch.Tensor:
    """(length,) B(m) = Σ_i cos(m·θ_i) for m = 1..length, in float64 (Men et al. 2024, eq. 10)."""
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return torch.cos(torch.arange(1, length + 1, dtype=torch.float64)[:, None] * theta[None]).sum(dim=1)


@functools.lru_cache(maxsize=None)
def retrieval_bound(head_dim: int, length: int, per_decade: int = 400) -> float:
    """The smallest θ with B(m) ≥ 0 for every m ≤ ``length`` (Men et al.'s bound): the first point of a log grid of
    ``per_decade`` points a decade over [1, 1e12] where it holds, refined by bisection against the point before,
    where it fails. The set of such θ is not one interval (for d = 128, T = 1000 it holds on [4207, 4335), fails to
    5176, holds again…), so the grid scan, not a bisection over the whole range, finds the smallest."""
    m = torch.arange(1, length + 1, dtype=torch.float64)[None, :, None]  # (1, T, 1)
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim  # (d/2,)
    logs = torch.arange(0, 12 * per_decade + 1, dtype=torch.float64) / per_decade  # log10 θ
    for chunk in logs.split(64):
        theta = 10.0 ** (-chunk[:, None] * exponents[None, :])  # (C, d/2)
        holds = (torch.cos(m * theta[:, None, :]).sum(dim=-1) >= 0).all(dim=1)  # (C,)
        if holds.any():
            high = float(chunk[int(holds.nonzero()[0, 0])])
            break
    else:
        raise ValueError(f"no base up to 1e12 keeps B(m) >= 0 to m = {length} for d = {head_dim}")
    low = high - 1 / per_decade
    for _ in range(30):
        mid = (low + high) / 2
        if bool((long_term_decay(10 ** mid, head_dim, length) >= 0).all()):
            high = mid
        else:
            low = mid
    return 10 ** high
