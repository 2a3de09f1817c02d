"""RoPE's base θ as an axis of the length and LM studies: ``rope`` trained at other bases (``rope`` itself is
θ = 10⁴), and the two bounds that say how far a base can read, for a head of d dimensions and a length T:

* **every pair turns within T** (Liu et al. 2024, "Scaling laws of RoPE-based extrapolation", ICLR,
  https://arxiv.org/abs/2310.05209, §3.2–3.3): pair i has period 2π·θ^(2i/d); the pairs whose period exceeds the
  training length never see a full turn in training, and past their "critical dimension" a model meets angles it
  never saw. Every pair turns within T when θ ≤ (T/2π)^(d/(d−2)) (``periodic_bound``): the regime in which the
  paper finds extrapolation beyond the training length.
* **reading T needs θ ≥ B(T)** (Men et al. 2024, "Base of RoPE bounds context length", NeurIPS,
  https://arxiv.org/abs/2405.14591, §4, eq. 10–11): a model can tell a similar token from a random one at distance m
  only while B(m) = Σ_i cos(m·θ_i) ≥ 0; the smallest θ with B(m) ≥ 0 for every m ≤ T is the lower bound
  (``retrieval_bound``; for d = 128 it gives 4.2e3 at T = 1k and 2.9e4 at 4k, the paper's Figure 1 values).

The grid (``THETA_AXIS``) straddles both for the full profile's heads and lengths: the LM (d = 64, L = 256: every
pair turns within L for θ ≤ 46; reading L needs θ ≥ 1.4e3, 8L θ ≥ 3.1e4) and the length study (d = 32, rows of up to
41 tokens in training and 161 at 4N: θ ≤ 7.4; θ ≥ 220 and 1.7e3).
"""

from __future__ import annotations

import math
from dataclasses import field, make_dataclass

import torch

from pelab.positional.base import Usage
from pelab.positional.rope import RotaryOptions, RotaryPositionalEncoding

THETA_AXIS: dict[str, float] = {"rope_theta10": 10.0, "rope_theta100": 100.0, "rope_theta1k": 1e3,
                                "rope_theta1m": 1e6}


def periodic_bound(head_dim: int, length: int) -> float:
    """The largest θ for which every pair of a d-dimensional head turns fully within ``length`` positions."""
    return (length / (2 * math.pi)) ** (head_dim / (head_dim - 2))


def long_term_decay(base: float, head_dim: int, length: int) -> torch.Tensor:
    """(length,) B(m) = Σ_i cos(m·θ_i) for m = 1..length, in float64 (Men et al. 2024, eq. 10)."""
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return torch.cos(torch.arange(1, length + 1, dtype=torch.float64)[:, None] * theta[None]).sum(dim=1)


def retrieval_bound(head_dim: int, length: int, steps: int = 60) -> float:
    """The smallest θ (to 0.1%, by bisection on log θ over [1, 1e12]) with B(m) ≥ 0 for every m ≤ ``length``."""
    low, high = 0.0, 12.0  # log10 θ: B fails at θ = 1 for any length > 1, holds at 1e12 for any length here
    for _ in range(steps):
        mid = (low + high) / 2
        if bool((long_term_decay(10 ** mid, head_dim, length) >= 0).all()):
            high = mid
        else:
            low = mid
    return 10 ** high


class ThetaRotaryPositionalEncoding(RotaryPositionalEncoding):
    """``rope`` at another base; its setup sentence places the base against both bounds where it is used."""

    def describe(self, usage: Usage) -> str | None:
        d, trained, longest = self.head_dim, usage.longest_train, usage.longest_eval
        periodic = periodic_bound(d, trained)
        turns = "every pair turns" if self.base <= periodic else "not every pair turns"
        return (f"θ = {self.base:g}: {turns} within the {trained} trained positions (Liu et al. 2024: θ ≤ "
                f"{periodic:.3g} for d = {d}); reading {trained} positions needs θ ≥ "
                f"{retrieval_bound(d, trained):.3g} and {longest} positions θ ≥ {retrieval_bound(d, longest):.3g} "
                "(Men et al. 2024).")


def rope_at(name: str, base: float) -> type[RotaryPositionalEncoding]:
    """The scheme ``name``: RoPE whose ``base`` defaults to ``base`` (every other option as ``rope``'s)."""
    title = "".join(part.title() for part in name.split("_"))  # rope_theta1k -> RopeTheta1K
    options = make_dataclass(f"{title}Options", [("base", float, field(default=base))], bases=(RotaryOptions,),
                             frozen=True)
    return type(f"{title}PositionalEncoding", (ThetaRotaryPositionalEncoding,), {
        "Options": options, "__module__": __name__, "__doc__": f"``{name}``: RoPE at θ = {base:g}."})


THETA_SCHEMES: dict[str, type[RotaryPositionalEncoding]] = {name: rope_at(name, base)
                                                           for name, base in THETA_AXIS.items()}
