"""Evaluation-time extensions of a trained ``rope`` model, under the names Hugging Face ``transformers`` gives them
(a model config's ``rope_type``; ``transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS``).

Each maps the trained inverse frequencies θ_i = base^(−2i/d) (d the head dimension, i < d/2) to new ones and an
attention factor m, for a row of T tokens read by a model trained on rows of L tokens, with the factor s a user
sets (``factor``). Queries and keys are both rotated by the new angles and multiplied by m (so the logits by m²),
as HF multiplies its cos and sin by m:

* ``linear``: position interpolation (Chen et al. 2023, https://arxiv.org/abs/2306.15595, eq. 3): θ_i / s.
* ``dynamic``: dynamic NTK scaling (emozilla 2023, HF ``_compute_dynamic_ntk_parameters``):
  base → base·(s·T/L − (s − 1))^(d/(d−2)) for T > L, unchanged for T ≤ L. With s = 1 it is NTK-aware scaling
  at T/L (bloc97 2023; YaRN, Peng et al. 2023, https://arxiv.org/abs/2309.00071, §3.2, eq. 16).
* ``yarn``: NTK-by-parts and temperature (YaRN §3.2–3.4, eq. 17–21): pair i turns r_i = L·θ_i/(2π) times over
  L tokens; pairs with r_i > β (32) keep θ_i, pairs with r_i < α (1) take θ_i/s, a linear ramp between (its ends
  rounded outwards to whole pairs, as HF does by default); m = 0.1·ln s + 1.
* ``llama3``: Llama 3.1's rule (Meta 2024, HF ``_compute_llama3_parameters``): wavelengths λ_i = 2π/θ_i longer
  than L/low_freq_factor (1) are divided by s, shorter than L/high_freq_factor (4) kept, a smooth blend between.

``longrope`` is not here: its per-pair factors are searched on held-out text of the target length (Ding et al.
2024, https://arxiv.org/abs/2402.13753), a tuning step that pelab's evaluation does not run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pelab.positional.rope import RotaryPositionalEncoding

YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0  # YaRN's α = 1, β = 32 (§3.2), HF's beta_slow / beta_fast
LLAMA3_LOW_FREQ_FACTOR, LLAMA3_HIGH_FREQ_FACTOR = 1.0, 4.0  # Llama 3.1's published values
ROPE_TYPES = ("linear", "dynamic", "yarn", "llama3")


def trained_inverse_frequencies(head_dim: int, base: float) -> torch.Tensor:
    """(d/2,) θ_i = base^(−2i/d) in float64 (RoFormer eq. 15)."""
    return 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def scaled_inverse_frequencies(rope_type: str, head_dim: int, base: float, factor: float, trained_length: int,
                               length: int) -> tuple[torch.Tensor, float]:
    """(d/2,) inverse frequencies in float64 and the attention factor m of ``rope_type`` with factor s =
    ``factor``, for rows of ``length`` tokens from a model trained on rows of ``trained_length``."""
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"unknown RoPE extension {rope_type!r}; valid choices: {', '.join(ROPE_TYPES)}")
    if not factor >= 1:
        raise ValueError(f"a RoPE extension's factor must be >= 1, got {factor}")
    theta = trained_inverse_frequencies(head_dim, base)
    if rope_type == "linear":
        return theta / factor, 1.0
    if rope_type == "dynamic":
        grown = factor * max(length, trained_length) / trained_length - (factor - 1)
        return trained_inverse_frequencies(head_dim, base * grown ** (head_dim / (head_dim - 2))), 1.0
    if rope_type == "yarn":
        return yarn_inverse_frequencies(theta, head_dim, base, factor, trained_length), yarn_attention_factor(factor)
    return llama3_inverse_frequencies(theta, factor, trained_length), 1.0


def yarn_attention_factor(factor: float) -> float:
    """YaRN eq. 22: √(1/t) = 0.1·ln s + 1 (1 for s ≤ 1)."""
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0


def yarn_inverse_frequencies(theta: torch.Tensor, head_dim: int, base: float, factor: float, trained_length: float,
                             beta_fast: float = YARN_BETA_FAST, beta_slow: float = YARN_BETA_SLOW,
                             truncate: bool = True) -> torch.Tensor:
    """YaRN eq. 17–20 in HF's form: the pair index at which a pair turns ``rotations`` times over the trained
    length is d·ln(L/(2π·rotations)) / (2·ln base); the ramp runs from the β-pair to the α-pair, its ends rounded
    outwards to whole pairs with ``truncate`` (HF's default; gpt-oss trains without), clamped to [0, d − 1]."""
    def pair_at(rotations: float) -> float:
        return head_dim * math.log(trained_length / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_at(beta_fast), pair_at(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001  # HF's guard against a zero-width ramp
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)  # 0: keep θ
    return theta / factor * ramp + theta * (1 - ramp)


def llama3_inverse_frequencies(theta: torch.Tensor, factor: float, trained_length: int) -> torch.Tensor:
    """Llama 3.1: λ = 2π/θ; λ < L/4 kept, λ > L/1 divided by s, between a blend weighted by L/λ."""
    wavelength = 2 * math.pi / theta
    smooth = (trained_length / wavelength - LLAMA3_LOW_FREQ_FACTOR) / (LLAMA3_HIGH_FREQ_FACTOR - LLAMA3_LOW_FREQ_FACTOR)
    blended = (1 - smooth) * theta / factor + smooth * theta
    out = torch.where(wavelength > trained_length / LLAMA3_LOW_FREQ_FACTOR, theta / factor, theta)
    medium = (wavelength >= trained_length / LLAMA3_HIGH_FREQ_FACTOR) & (
        wavelength <= trained_length / LLAMA3_LOW_FREQ_FACTOR)
    return torch.where(medium, blended, out)


class ExtendedRotary(RotaryPositionalEncoding):
    """A trained ``rope`` module read with given inverse frequencies (d/2,) and attention factor m: queries and
    keys rotated by position × θ'_i and both multiplied by m. Built by ``extend``; evaluation only."""

    def __init__(self, trained: RotaryPositionalEncoding, inverse_frequencies: torch.Tensor,
                 attention_factor: float) -> None:
        super().__init__(d_model=trained.d_model, n_heads=trained.n_heads, causal=trained.causal,
                         n_layers=trained.n_layers, base=trained.base)
        self.register_buffer("inverse_frequencies", inverse_frequencies.to(torch.float32), persistent=False)
        self.attention_factor = attention_factor

    def angles(self, positions: torch.Tensor) -> torch.Tensor:
        """(T,) -> (T, Dh/2) angles m·θ'_i."""
        theta = self.inverse_frequencies.to(positions.device)
        return positions.to(theta.dtype)[:, None] * theta[None, :]

    def rotate(self, q, k, q_pos, k_pos):
        q, k = super().rotate(q, k, q_pos, k_pos)
        if self.attention_factor != 1.0:
            q, k = q * self.attention_factor, k * self.attention_factor
        return q, k

    def extended(self, **options) -> RotaryPositionalEncoding:
        raise TypeError("an extended RoPE module is not extended again: extend the trained module")


def extend(trained: RotaryPositionalEncoding, rope_type: str, factor: float, trained_length: int,
           length: int) -> ExtendedRotary:
    """``trained`` (unchanged) read with ``rope_type`` at ``factor`` for rows of ``length`` tokens. ``dynamic`` is
    read at the whole row's length for every position of it, as HF reads a full forward over the row (HF's
    ``generate`` grows it with the tokens written, without rotating the cached keys again)."""
    theta, attention_factor = scaled_inverse_frequencies(rope_type, trained.head_dim, trained.base, factor,
                                                         trained_length, length)
    return ExtendedRotary(trained, theta, attention_factor)


@dataclass(frozen=True)
class Variant:
    """One row of the menu that evaluation scores every ``rope`` run with: records under split suffix ``suffix``,
    shown as the pseudo-scheme ``rope+<label>``. ``factor_at``: the factor s for rows of T tokens, ``"row"`` T/L,
    ``"longest"`` the fixed factor a user would set to reach the longest evaluated row, ``"one"`` 1 (``dynamic``
    then grows with T/L by itself); ``identity_within``: equal to the trained model on rows of at most L tokens (then
    it is scored beyond L only)."""

    suffix: str
    label: str
    rope_type: str
    factor_at: str
    identity_within: bool
    in_length_study: bool = True  # scored in the length study too (the remappings are the LM's)

    def factor(self, length: int, trained_length: int, longest: int) -> float:
        """s for rows of ``length`` tokens."""
        return {"row": max(length, trained_length) / trained_length, "longest": max(longest, trained_length)
                / trained_length, "one": 1.0}[self.factor_at]

    def module(self, trained: RotaryPositionalEncoding, length: int, trained_length: int,
               longest: int) -> ExtendedRotary:
        """The extension for rows of ``length`` tokens (on the CPU: move it to the model's device)."""
        return extend(trained, self.rope_type, self.factor(length, trained_length, longest), trained_length, length)


MENU = (
    Variant("_pi", "PI", "linear", factor_at="row", identity_within=True),  # position interpolation at s = T/L
    Variant("_ntk", "NTK", "dynamic", factor_at="one", identity_within=True),  # NTK-aware scaling at T/L
    Variant("_dynamic", "dynamic", "dynamic", factor_at="longest", identity_within=True),
    Variant("_yarn", "yarn", "yarn", factor_at="longest", identity_within=False),
    Variant("_llama3", "llama3", "llama3", factor_at="longest", identity_within=False),
)
