"""``rope``: rotary position embedding (Su et al., RoFormer, https://arxiv.org/abs/2104.09864).

Rotates each adjacent pair of query/key dimensions by t·θ_i, so q_m·k_n depends only on m − n.
Uses the fast elementwise form; ``functional.rope_rotation_matrices`` is the explicit block-matrix
form the tests compare it with. Pairs are interleaved (x_2i, x_2i+1) as in the paper; HF llama
pairs x_i with x_{i+Dh/2} (the "half-split" layout), equivalent up to a permutation of dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass

from pelab.positional.base import PositionalEncoding
from pelab.positional.functional import rope_angles, rope_rotate


@dataclass(frozen=True)
class RotaryOptions:
    base: float = 10000.0  # θ_i = base^(-2i/Dh), RoFormer eq. 15

    def __post_init__(self) -> None:
        if not self.base > 1:
            raise ValueError(f"positional.rope.base must be > 1, got {self.base}")


class RotaryPositionalEncoding(PositionalEncoding):
    Options = RotaryOptions

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, base: float) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(
                f"rope needs an even head dimension, got d_model={d_model} / n_heads={n_heads} = "
                f"{d_model / n_heads:g}; choose d_model and n_heads so that d_model/n_heads is even"
            )
        self.base = base

    def rotate(self, q, k, q_pos, k_pos):
        q = rope_rotate(q, rope_angles(q_pos, self.head_dim, self.base))  # (B, H, Tq, Dh)
        k = rope_rotate(k, rope_angles(k_pos, self.head_dim, self.base))  # (B, H, Tk, Dh)
        return q, k
