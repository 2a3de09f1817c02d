"""Attention temperature at evaluation, for every scheme: a trained model read with its attention logits (content
and positional bias alike) multiplied by s = ln T / ln L on rows of T > L tokens, L the longest trained row.

Log-length scaling keeps the attention of a query from flattening as the number of keys grows: Chiang & Cholak 2022
(https://arxiv.org/abs/2202.12172, §5) multiply the logits by log n; Qwen's ``logn`` attention
(github.com/QwenLM/Qwen, ``modeling_qwen.py``) scales the queries by log_L of the position beyond the training
length; Wang et al. 2024 (https://arxiv.org/abs/2404.12224) extend NoPE with a softmax temperature. Here s is one
number per row (the row's length, as the RoPE extensions read it), normalised to 1 at L, so within L the model is
the trained one. YaRN's own factor for RoPE is ``rope_extensions``' ``yarn``.

``TEMPERATURE`` has the interface of ``rope_extensions.Variant`` (``suffix``, ``label``, ``identity_within``,
``module``), so evaluation scores it beside the extensions; it applies to every scheme.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding

_TEMPERED: dict[type, type] = {}  # one subclass per scheme class


def log_length_scale(length: int, trained_length: int) -> float:
    """s = max(1, ln T / ln L)."""
    return max(1.0, math.log(length) / math.log(trained_length)) if trained_length > 1 else 1.0


def tempered(pe: PositionalEncoding, scale: float) -> PositionalEncoding:
    """``pe`` (unchanged) read with its attention logits multiplied by ``scale``: a shallow copy of the same
    module (its parameters and buffers shared) whose class subclasses ``pe``'s, so it draws positions as ``pe``
    does (a randomized scheme stays one); queries scaled after ``rotate``, every layer's bias scaled, and a content
    bias (FoX's decay, CoPE's position logits) read from the trained queries and scaled."""
    cls = type(pe)
    if cls not in _TEMPERED:
        _TEMPERED[cls] = type(f"Tempered{cls.__name__}", (cls,), {
            "rotate": _rotate, "layer_biases": _layer_biases, "layer": _layer, "content_bias": _content_bias,
            "__module__": __name__})
    other = nn.Module.__new__(_TEMPERED[cls])
    other.__dict__ = {**pe.__dict__, "temperature": float(scale)}
    return other


def _rotate(self, q: torch.Tensor, k: torch.Tensor, q_pos: torch.Tensor,
            k_pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    q, k = super(type(self), self).rotate(q, k, q_pos, k_pos)
    return q * self.temperature, k  # (B, H, Tq, Dh): q·k scaled by s


def _layer(self, index: int) -> PositionalEncoding:
    inner = super(type(self), self).layer(index)  # a layout's layer type: its queries scaled too (biases: below)
    return self if inner is self else tempered(inner, self.temperature)


def _content_bias(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                  cache: dict[str, torch.Tensor] | None = None) -> torch.Tensor | None:
    # q arrives scaled by ``_rotate``: the scheme reads its own (CoPE's gates count as trained), its bias is scaled
    bias = super(type(self), self).content_bias(x, q / self.temperature, k, cache)
    return None if bias is None else bias * self.temperature


def _layer_biases(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> list[torch.Tensor | None]:
    return [None if b is None else b * self.temperature for b in super(type(self), self).layer_biases(q_pos, k_pos)]


@dataclass(frozen=True)
class Temperature:
    """Evaluation's row for the log-length temperature: split suffix ``_logn``, pseudo-scheme ``<scheme>+logn``."""

    suffix: str = "_logn"
    label: str = "logn"
    identity_within: bool = True  # s = 1 on rows of at most L tokens

    def module(self, trained: PositionalEncoding, length: int, trained_length: int,
               longest: int) -> PositionalEncoding:
        return tempered(trained, log_length_scale(length, trained_length))


TEMPERATURE = Temperature()
