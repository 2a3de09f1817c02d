"""``fope``: Fourier Position Embedding (Hua et al. 2024, "Fourier Position Embedding: Enhancing Attention's Periodic
Extension for Length Generalization", https://arxiv.org/abs/2412.17739, §4 and Appendix B), as its reference code
configures it for the paper's runs (github.com/TsinghuaC3I/Fourier-Position-Embedding, ``olmo/model.py``
``FourierEmbedding``, ``RotaryEmbedding.get_inv_freq``; ``configs/*/ce-fourier``).

RoPE treats each pair of dimensions as one frequency; FoPE makes each a Fourier series over the frequencies RoPE has,
and clips the ones training cannot learn:

1. *Clip.* RoPE's ω_i = base^(−2i/d) (i < d/2) below 2π/L, which do not turn once within the training length L
   (``max_period``), become 0, and the zero frequencies are dropped from the series: D of them remain
   (``rope_clamp_floor_freq``, ``rope_clamp_floor_to_zero``, ``fourier_ignore_zero``).
2. *Series.* Each layer holds two fixed random matrices per head, C^cos and C^sin (H, D, d'), d' = min(D, d/4): the
   identity (or, for D > d', a step identity, C[i·⌈D/d'⌉, i] = 1) plus Xavier-normal noise of gain σ (``gain``, the
   paper's σ = 0.3 at 60M; torch's fans of an (H, D, d') tensor, so the noise's std is σ·√(2/(d'·(D + H)))). They are
   not trained (the paper's Appendix B; ``fourier_learnable`` false). At position t, slot j < d' reads
       cos_j(t) = Σ_D cos(ω_D·t)·C^cos[h, D, j],   sin_j(t) = Σ_D sin(ω_D·t)·C^sin[h, D, j],
   and the slots from d' to d/2 read cos = sin = 1 (the reference pads with 1: a fixed 45° turn and √2 gain, so such
   a pair adds 2·q·k to the logit at every distance).
3. *Apply* to queries and keys as RoPE does, (x, y) → (x·cos − y·sin, y·cos + x·sin) per pair, here on interleaved
   pairs (x_2j, x_2j+1) where the reference pairs x_j with x_{j+d/2}: the same q·k under that permutation of dimensions
   (tests/test_fope.py checks it against a transcription of the reference's forward).

With σ = 0 and D ≤ d/4, FoPE is RoPE on the kept frequencies (its padded pairs aside); with σ > 0 a logit is no longer a
function of the offset alone (Fourier series of several frequencies do not compose as one rotation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage


def kept_frequencies(head_dim: int, base: float, max_period: float) -> torch.Tensor:
    """(D,) RoPE's ω_i = base^(−2i/d) that turn fully within ``max_period`` positions, ω_i ≥ 2π/max_period, in
    float64 (the reference's clip, its zeros dropped)."""
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return omega[omega >= 2 * math.pi / max_period]


def series_coefficients(n_heads: int, kept: int, slots: int, gain: float) -> torch.Tensor:
    """(H, D, d') the reference's ``eye_xavier_norm`` init: Xavier-normal noise of ``gain`` plus the (step) identity."""
    coef = torch.empty(n_heads, kept, slots)
    nn.init.xavier_normal_(coef, gain=gain)
    step = math.ceil(kept / slots)
    for i in range(slots):
        if i * step < kept:
            coef[:, i * step, i] += 1.0
    return coef


@dataclass(frozen=True)
class FoPEOptions:
    base: float = 10000.0  # RoPE's θ
    max_period: float = 64.0  # the training length L: frequencies below 2π/L are clipped; a study sets its own
    gain: float = 0.3  # σ of the coefficients' Xavier-normal noise (the paper's 60M runs; 0.4 at 180M, 0.6 at 1.2B)

    def check(self, where: str) -> None:
        if not self.base > 1:
            raise ValueError(f"{where}.base must be > 1, got {self.base}")
        if not self.max_period >= 2 * math.pi:
            raise ValueError(f"{where}.max_period must be >= 2π (the fastest frequency's period), got "
                             f"{self.max_period}")
        if not self.gain >= 0:
            raise ValueError(f"{where}.gain must be >= 0, got {self.gain}")


class FourierLayer(PositionalEncoding):
    """One layer's series (module docstring): its ``rotate`` applies them; every other slot is a no-op."""

    def __init__(self, *, d_model: int, n_heads: int, causal: bool, omega: torch.Tensor, gain: float) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal)
        slots = min(len(omega), self.head_dim // 4)
        self.register_buffer("omega", omega.to(torch.float32))  # (D,)
        self.register_buffer("cos_coef", series_coefficients(n_heads, len(omega), slots, gain))  # (H, D, d')
        self.register_buffer("sin_coef", series_coefficients(n_heads, len(omega), slots, gain))  # (H, D, d')

    def series(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(T,) -> cos, sin (H, T, Dh/2): the series in the first d' slots, 1 in the rest."""
        angles = positions.to(torch.float32)[:, None] * self.omega[None, :]  # (T, D)
        cos = torch.einsum("tD,hDd->htd", angles.cos(), self.cos_coef)  # (H, T, d')
        sin = torch.einsum("tD,hDd->htd", angles.sin(), self.sin_coef)
        pad = self.head_dim // 2 - cos.shape[-1]
        cos, sin = (nn.functional.pad(x, (0, pad), value=1.0) for x in (cos, sin))
        return cos.to(dtype), sin.to(dtype)

    def apply(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """x (B, H, T, Dh) -> (B, H, T, Dh): pair (x_2j, x_2j+1) -> (x·cos_j − y·sin_j, y·cos_j + x·sin_j)."""
        cos, sin = self.series(positions, x.dtype)  # (H, T, Dh/2)
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)

    def rotate(self, q, k, q_pos, k_pos):
        return self.apply(q, q_pos), self.apply(k, k_pos)

    def rotation_frequencies(self) -> torch.Tensor:
        """(Dh/2,) each slot's main frequency (its identity entry), 0 for the padded slots."""
        slots = self.cos_coef.shape[-1]
        step = math.ceil(len(self.omega) / slots)
        index = torch.arange(slots) * step  # slot i's identity entry; none past the kept frequencies
        out = torch.zeros(self.head_dim // 2)
        valid = index < len(self.omega)
        out[:slots][valid] = self.omega[index[valid]]
        return out


class FoPEPositionalEncoding(PositionalEncoding):
    """A series per layer (``layer(i)``), as the reference builds a ``FourierEmbedding`` in every block."""

    Options = FoPEOptions
    layer_slot = "rotate"  # what each layer's scheme does (``pelab schemes``)
    source = ("Hua et al. 2024, arXiv 2412.17739; reference code TsinghuaC3I/Fourier-Position-Embedding "
              "(olmo/model.py FourierEmbedding)")

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1,
                 base: float = 10000.0, max_period: float = 64.0, gain: float = 0.3) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        if self.head_dim < 4 or self.head_dim % 2:
            raise ValueError(f"fope needs an even head dimension of at least 4 (d/4 series slots), got d_model="
                             f"{d_model} / n_heads={n_heads} = {d_model / n_heads:g}")
        self.base, self.max_period, self.gain = base, max_period, gain
        omega = kept_frequencies(self.head_dim, base, max_period)
        self.layers = nn.ModuleList(FourierLayer(d_model=d_model, n_heads=n_heads, causal=causal, omega=omega,
                                                 gain=gain) for _ in range(n_layers))

    def layer(self, index: int) -> PositionalEncoding:
        return self.layers[index]

    def rotation_frequencies(self) -> torch.Tensor:
        return self.layers[0].rotation_frequencies()

    def describe(self, usage: Usage) -> str:
        kept, slots = len(self.layers[0].omega), self.layers[0].cos_coef.shape[-1]
        return (f"frequencies below 2π/{self.max_period:g} clipped ({kept} of {self.head_dim // 2} kept), each of "
                f"{slots} pairs a fixed random series over them (σ = {self.gain:g}, per layer and head, not trained), "
                f"the other {self.head_dim // 2 - slots} pairs turned by a fixed 45° at √2 gain, as the reference.")
