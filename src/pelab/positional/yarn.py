"""RoPE trained with YaRN's frequencies: a layer type of the layouts (``layout.LAYER_SCHEMES['yarn']``), as gpt-oss
ships it (HF ``GptOssConfig.rope_parameters``: rope_type yarn, factor 32, beta_fast 32, beta_slow 1, truncate false,
original_max_position_embeddings 4096, θ = 150,000; ``openai/gpt-oss`` ``gpt_oss/torch/model.py``,
``RotaryEmbedding._compute_concentration_and_inv_freq``).

YaRN (Peng et al. 2023, https://arxiv.org/abs/2309.00071, §3.2–3.4, eq. 17–22), NTK-by-parts with a temperature: over
the ``original_length`` L₀ positions, pair i (θ_i = base^(−2i/d)) turns r_i = L₀·θ_i/(2π) times. The pair index that
turns ``rotations`` times is d·ln(L₀/(2π·rotations)) / (2·ln base) (HF ``find_correction_dim``); the ramp runs from
the β_fast-pair (low) to the β_slow-pair (high), clamped to [0, d/2 − 1], its ends rounded outwards to whole pairs only
with ``truncate`` (HF's default; gpt-oss sets it false). With ρ_i = clamp((i − low)/(high − low), 0, 1):
    θ'_i = θ_i/s·ρ_i + θ_i·(1 − ρ_i)          (pairs that turn often keep θ_i, the slow ones are interpolated by s)
and queries and keys are both multiplied by m = 0.1·ln s + 1 (eq. 22; HF multiplies cos and sin by it, gpt-oss calls
it the concentration), so every logit by m².

This is a trained model's rotation, not an evaluation-time extension (``rope_extensions``, which rescale a trained
``rope`` model's θ): the model trains on these frequencies, as gpt-oss's released weights use them at every context.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pelab.positional.base import Usage
from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.rope_extensions import (trained_inverse_frequencies, yarn_attention_factor,
                                             yarn_inverse_frequencies)


def yarn_frequencies(head_dim: int, base: float, factor: float, original_length: float, beta_fast: float = 32.0,
                     beta_slow: float = 1.0, truncate: bool = False, dtype: torch.dtype = torch.float32,
                     device: torch.device | None = None) -> torch.Tensor:
    """(Dh/2,) θ'_i of the module docstring, computed in float64 (``rope_extensions``' YaRN, which the evaluation-time
    extension of a trained ``rope`` uses too) and returned in ``dtype``."""
    theta = trained_inverse_frequencies(head_dim, base)  # (Dh/2,) RoFormer eq. 15
    return yarn_inverse_frequencies(theta, head_dim, base, factor, original_length, beta_fast, beta_slow,
                                    truncate).to(dtype=dtype, device=device)


@dataclass(frozen=True)
class YaRNOptions:
    base: float = 150000.0  # gpt-oss's θ
    factor: float = 32.0  # s: the context the frequencies are set for, in units of original_length
    original_length: float = 64.0  # L₀ (HF original_max_position_embeddings): a study sets its own training length
    beta_fast: float = 32.0  # the ramp's ends in turns over L₀ (YaRN's β and α)
    beta_slow: float = 1.0
    truncate: bool = False  # round the ramp's ends outwards to whole pairs (HF's default True; gpt-oss False)

    def check(self, where: str) -> None:
        if not self.base > 1:
            raise ValueError(f"{where}.base must be > 1, got {self.base}")
        if not self.factor >= 1:
            raise ValueError(f"{where}.factor must be >= 1 (1: RoPE), got {self.factor}")
        if not self.original_length > 0:
            raise ValueError(f"{where}.original_length must be > 0 positions, got {self.original_length}")
        if not self.beta_fast > self.beta_slow > 0:
            raise ValueError(f"{where}: beta_fast must exceed beta_slow > 0, got {self.beta_fast}, {self.beta_slow}")


class YaRNRotary(RotaryPositionalEncoding):
    """RoPE on YaRN's frequencies θ'_i with queries and keys scaled by m (module docstring)."""

    Options = YaRNOptions
    variants = ""  # HF's extensions rescale a plain RoPE's θ; this one is already stretched by s

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1,
                 base: float = 150000.0, factor: float = 32.0, original_length: float = 64.0, beta_fast: float = 32.0,
                 beta_slow: float = 1.0, truncate: bool = False) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers, base=base)
        self.factor, self.original_length = factor, original_length
        self.beta_fast, self.beta_slow, self.truncate = beta_fast, beta_slow, truncate
        self.attention_factor = yarn_attention_factor(factor)

    def angles(self, positions: torch.Tensor) -> torch.Tensor:
        """(T,) -> (T, Dh/2) angles m·θ'_i."""
        dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
        theta = yarn_frequencies(self.head_dim, self.base, self.factor, self.original_length, self.beta_fast,
                                 self.beta_slow, self.truncate, dtype, positions.device)
        return positions.to(dtype)[:, None] * theta[None, :]

    def rotate(self, q, k, q_pos, k_pos):
        q, k = super().rotate(q, k, q_pos, k_pos)  # (B, H, T, Dh) each
        if self.attention_factor != 1.0:
            q, k = q * self.attention_factor, k * self.attention_factor
        return q, k

    def extended(self, **options) -> RotaryPositionalEncoding:
        raise TypeError("a YaRN rotation is not extended again: its frequencies are already stretched by its factor")

    def options(self) -> YaRNOptions:  # type: ignore[override]
        return YaRNOptions(base=self.base, factor=self.factor, original_length=self.original_length,
                           beta_fast=self.beta_fast, beta_slow=self.beta_slow, truncate=self.truncate)

    def describe(self, usage: Usage) -> str | None:
        return None  # stated by the layout's layer text (its options)
