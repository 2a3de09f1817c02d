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
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from pelab.positional.base import PositionalEncoding
from pelab.positional.functional import rope_angles, rope_rotate


@dataclass(frozen=True)
class RotaryOptions:
    base: float = 10000.0  # θ_i = base^(-2i/Dh), RoFormer eq. 15
    interpolation_factor: float = 1.0  # s: positions m -> m/s (position interpolation; evaluation)
    base_rescale_factor: float = 1.0  # s: base -> base·s^(Dh/(Dh−2)) (NTK-aware scaling; evaluation)

    def __post_init__(self) -> None:
        if not self.base > 1:
            raise ValueError(f"positional.rope.base must be > 1, got {self.base}")
        if not self.interpolation_factor >= 1 or not self.base_rescale_factor >= 1:
            raise ValueError(f"positional.rope.interpolation_factor and base_rescale_factor must be >= 1 (1: off), "
                             f"got {self.interpolation_factor}, {self.base_rescale_factor}")


class RotaryPositionalEncoding(PositionalEncoding):
    Options = RotaryOptions
    variants = "rope_extensions"  # scored with HF's context extensions too (positional.variants)

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, base: float,
                 interpolation_factor: float = 1.0, base_rescale_factor: float = 1.0) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(
                f"rope needs an even head dimension, got d_model={d_model} / n_heads={n_heads} = "
                f"{d_model / n_heads:g}; choose d_model and n_heads so that d_model/n_heads is even"
            )
        self.base = base
        self.interpolation_factor = interpolation_factor
        self.base_rescale_factor = base_rescale_factor

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
        return rope_angles(self.scaled_positions(positions), self.head_dim, base)

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
        return RotaryOptions(self.base, self.interpolation_factor, self.base_rescale_factor)

    def rotate(self, q, k, q_pos, k_pos):
        q = rope_rotate(q, self.angles(q_pos))  # (B, H, Tq, Dh)
        k = rope_rotate(k, self.angles(k_pos))  # (B, H, Tk, Dh)
        return q, k
