"""``rope``: rotary position embedding (Su et al., RoFormer, https://arxiv.org/abs/2104.09864).

Rotates each adjacent pair of query/key dimensions by t·θ_i, so q_m·k_n depends only on m − n.
Uses the fast elementwise form; ``functional.rope_rotation_matrices`` is the explicit block-matrix
form the tests compare it with. Pairs are interleaved (x_2i, x_2i+1) as in the paper; HF llama
pairs x_i with x_{i+Dh/2} (the "half-split" layout), equivalent up to a permutation of dimensions.

Two options extend a trained model past its context at evaluation, without retraining (x-transformers'
``RotaryEmbedding(interpolation_factor=…, base_rescale_factor=…)``); both are 1 (off) in training:
* ``interpolation_factor`` s: position interpolation (Chen et al. 2023, https://arxiv.org/abs/2306.15595,
  eq. 3): position m is read as m/s, so s = T/L keeps every angle of a T-token row inside the trained range;
* ``base_rescale_factor`` s: NTK-aware scaling (bloc97 2023; YaRN, Peng et al. 2023,
  https://arxiv.org/abs/2309.00071, §3.2, eq. 16): base -> base·s^(Dh/(Dh−2)), so the lowest frequency is
  interpolated by s and the highest kept (x-transformers applies the same exponent to its factor).

Partial rotation, in the two conventions Hugging Face ``transformers`` names (``modeling_rope_utils``), which agree
at position 0 and drift apart with distance (HF #48652): with f = ``partial_rotary_factor`` < 1,
* ``rope_type: default`` (GPT-NeoX's ``rotary_pct``, Phi, StableLM; HF's per-model ``compute_default_rope_parameters``,
  e.g. ``PhiRotaryEmbedding``'s, with ``PhiAttention`` splitting q into q_rot, q_pass): the
  first r = int(f·Dh) dimensions are rotated with the spectrum of an r-dimensional head, θ_i = base^(−2i/r), i < r/2;
  the other Dh − r pass unrotated;
* ``rope_type: proportional`` (p-RoPE, Barbero et al. 2025, "Round and round we go",
  https://arxiv.org/abs/2410.06205, §6; HF ``_compute_proportional_rope_parameters``): the full-width spectrum
  θ_i = base^(−2i/Dh) is kept for its int(f·Dh/2) highest frequencies and the lowest ones are set to 0 (unrotated).
Here pairs are interleaved, so "the first r dimensions" are the first r/2 pairs; q·k is the same as HF's half-split
layout's under the matching permutation of dimensions (``tests/test_layouts_hf.py`` checks it at 8L).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.functional import rope_angles, rope_rotate
from pelab.positional.rope_theta import periodic_bound, retrieval_bound


ROTATION_TYPES = ("default", "proportional")  # HF ``rope_type``s of a trained model's rotation (partial or not)


def inverse_frequencies(head_dim: int, base: float, partial_rotary_factor: float = 1.0, rope_type: str = "default",
                        dtype: torch.dtype = torch.float32, device: torch.device | None = None,
                        max_period: float = 0.0) -> torch.Tensor:
    """(Dh/2,) the angle per position of each interleaved pair, 0 for pairs left unrotated (module docstring); with
    ``max_period`` > 0 also 0 for every pair whose period 2π/θ_i exceeds it (HoPE)."""
    half = head_dim // 2
    if rope_type == "proportional":  # HF: rope_angles = int(f·Dh // 2) of the full-width spectrum, the rest 0
        rotated = int(partial_rotary_factor * head_dim // 2)
        width = head_dim
    else:  # HF default: dim = int(Dh·f), inv_freq = base^(−arange(0, dim, 2)/dim)
        width = int(head_dim * partial_rotary_factor)
        rotated = (width + 1) // 2
    theta = base ** (-torch.arange(0, 2 * rotated, 2, dtype=dtype, device=device) / width)
    if max_period > 0:  # HoPE keeps the pairs that turn fully within max_period positions: θ_i ≥ 2π/max_period
        theta = torch.where(theta >= 2 * math.pi / max_period, theta, torch.zeros_like(theta))
    return torch.cat([theta, torch.zeros(half - rotated, dtype=dtype, device=device)])


@dataclass(frozen=True)
class RotaryOptions:
    base: float = 10000.0  # θ_i = base^(-2i/Dh), RoFormer eq. 15
    interpolation_factor: float = 1.0  # s: positions m -> m/s (position interpolation; evaluation)
    base_rescale_factor: float = 1.0  # s: base -> base·s^(Dh/(Dh−2)) (NTK-aware scaling; evaluation)
    partial_rotary_factor: float = 1.0  # f: the share of each head's dimensions rotated (HF's name); 1: all
    rope_type: str = "default"  # how f < 1 is read (HF's names): "default" (first f·Dh dims) | "proportional" (p-RoPE)
    max_period: float = 0.0  # HoPE: pairs whose period 2π/θ_i exceeds this many positions left unrotated; 0: off

    def __post_init__(self) -> None:
        if not self.base > 1:
            raise ValueError(f"positional.rope.base must be > 1, got {self.base}")
        if not 0 < self.partial_rotary_factor <= 1:
            raise ValueError(f"positional.rope.partial_rotary_factor must be in (0, 1], got {self.partial_rotary_factor}")
        if self.rope_type not in ROTATION_TYPES:
            raise ValueError(f"unknown positional.rope.rope_type {self.rope_type!r}; valid choices: "
                             f"{', '.join(ROTATION_TYPES)}")
        if not (self.max_period == 0 or self.max_period >= 2 * math.pi):
            raise ValueError(f"positional.rope.max_period must be 0 (off) or >= 2π, the fastest pair's period, got "
                             f"{self.max_period}")
        if not self.interpolation_factor >= 1 or not self.base_rescale_factor >= 1:
            raise ValueError(f"positional.rope.interpolation_factor and base_rescale_factor must be >= 1 (1: off), "
                             f"got {self.interpolation_factor}, {self.base_rescale_factor}")


class RotaryPositionalEncoding(PositionalEncoding):
    Options = RotaryOptions
    variants = "rope_extensions"  # scored with HF's context extensions too (positional.variants)

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, base: float,
                 interpolation_factor: float = 1.0, base_rescale_factor: float = 1.0,
                 partial_rotary_factor: float = 1.0, rope_type: str = "default", max_period: float = 0.0) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(
                f"rope needs an even head dimension, got d_model={d_model} / n_heads={n_heads} = "
                f"{d_model / n_heads:g}; choose d_model and n_heads so that d_model/n_heads is even"
            )
        self.base = base
        self.interpolation_factor = interpolation_factor
        self.base_rescale_factor = base_rescale_factor
        self.partial_rotary_factor = partial_rotary_factor
        self.rope_type = rope_type
        self.max_period = max_period
        if self.partial:
            width = int(self.head_dim * partial_rotary_factor)
            if rope_type == "default" and (width < 2 or width % 2):  # HF would rotate a half pair
                raise ValueError(f"positional.rope.partial_rotary_factor={partial_rotary_factor} must rotate a whole "
                                 f"number of pairs of the {self.head_dim}-dimensional head (f·Dh even and >= 2 for "
                                 f"rope_type default)")
            # proportional: int(f·Dh/2) pairs, none in a head too narrow for f (then no pair turns: as HF computes it)
            if base_rescale_factor != 1.0:
                raise ValueError("positional.rope.base_rescale_factor applies to a full rotation; with "
                                 f"partial_rotary_factor={partial_rotary_factor} keep it 1")
            # HF's context extensions rescale the full-width spectrum; a partial rotation keeps the temperature and crop
            self.variants = ""

    @property
    def partial(self) -> bool:
        """Whether some pairs stay unrotated (a partial rotation, or HoPE's ``max_period``)."""
        return self.partial_rotary_factor < 1.0 or self.max_period > 0

    def scaled_positions(self, positions: torch.Tensor) -> torch.Tensor:
        """Positions as the rotation reads them: m/s under position interpolation, else unchanged."""
        if self.interpolation_factor == 1.0:
            return positions
        return positions.to(torch.float32) * (1.0 / self.interpolation_factor)

    def angles(self, positions: torch.Tensor) -> torch.Tensor:
        """(T,) -> (T, Dh/2) rotation angles m·θ_i, with both evaluation-time extensions applied."""
        base = self.base
        if self.base_rescale_factor != 1.0:
            base = base * self.base_rescale_factor ** (self.head_dim / (self.head_dim - 2))  # YaRN eq. 16
        if not self.partial:
            return rope_angles(self.scaled_positions(positions), self.head_dim, base)
        positions = self.scaled_positions(positions)
        dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
        theta = inverse_frequencies(self.head_dim, base, self.partial_rotary_factor, self.rope_type, dtype,
                                    positions.device, self.max_period)
        return positions.to(dtype)[:, None] * theta[None, :]  # (T, Dh/2)

    def rotation_frequencies(self) -> torch.Tensor:
        """θ_f per position as the rotation applies it (after both extensions): the angles at position 1."""
        return self.angles(torch.ones(1))[0]

    def extended(self, *, interpolation_factor: float = 1.0,
                 base_rescale_factor: float = 1.0) -> RotaryPositionalEncoding:
        """A new module equal to this one with the evaluation-time extensions set (this one is unchanged)."""
        options = replace(self.options(), interpolation_factor=interpolation_factor,
                          base_rescale_factor=base_rescale_factor)
        return RotaryPositionalEncoding(d_model=self.d_model, n_heads=self.n_heads, causal=self.causal,
                                        n_layers=self.n_layers, **vars(options))

    def options(self) -> RotaryOptions:
        return RotaryOptions(base=self.base, interpolation_factor=self.interpolation_factor,
                             base_rescale_factor=self.base_rescale_factor,
                             partial_rotary_factor=self.partial_rotary_factor, rope_type=self.rope_type,
                             max_period=self.max_period)

    def describe(self, usage: Usage) -> str | None:
        """Its base θ against both bounds where it is not RoPE's 10⁴ (the θ axis, ``rope_theta``)."""
        if self.base == RotaryOptions.base:
            return None
        d, trained, longest = self.head_dim, usage.longest_train, usage.longest_eval
        periodic = periodic_bound(d, trained)
        turns = "every pair turns" if self.base <= periodic else "not every pair turns"
        return (f"θ = {self.base:g}: {turns} within the {trained} trained positions (Liu et al. 2024: θ ≤ "
                f"{periodic:.3g} for d = {d}); reading {trained} positions needs θ ≥ "
                f"{retrieval_bound(d, trained):.3g} and {longest} positions θ ≥ {retrieval_bound(d, longest):.3g} "
                "(Men et al. 2024).")

    def rotate(self, q, k, q_pos, k_pos):
        q = rope_rotate(q, self.angles(q_pos))  # (B, H, Tq, Dh)
        k = rope_rotate(k, self.angles(k_pos))  # (B, H, Tk, Dh)
        return q, k
