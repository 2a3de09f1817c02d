"""``cope``: contextual position encoding (Golovneva et al. 2024, "Contextual Position Encoding: Learning to Count
What's Important", https://arxiv.org/abs/2405.18719, §3): positions counted by gates the context opens.

Query i gates each key k it can see, g_ik = σ(q_i·k_k / √Dh), and the position of key j is the number of open gates
from j to i, a fraction in general:

    p_ij = Σ_{k=j}^{i} g_ik,

clamped to ``npos`` − 1. Each layer learns a table e[0..npos−1] of Dh-vectors shared by its heads; the logit gains
q_i·e[p_ij], the table read between its two nearest rows (z_ij = q_i·e[⌊p⌋]·(1 − w) + q_i·e[⌈p⌉]·w, w = p − ⌊p⌋),
and is divided by √Dh with q·k, as the reference code (github.com/facebookresearch/RAM, ``projects/cope/src/cope/
context_position.py``, ``ContextPosSelfAttn.forward``: ``attn_logits = (q·k + pos_logits) / √d``; the table
``pos_emb`` (1, Dh, npos) starts at zero and is shared by the heads; ``npos = block_size + 1`` there). At the start
(a zero table) CoPE is NoPE.

The paper is causal. In a bidirectional encoder, as pelab's ``alibi``, the even heads look left (these positions,
keys to the right masked) and the odd heads right, counting the gates from i to j: p_ij = Σ_{k=i}^{j} g_ik.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.functional import right_looking_heads


@dataclass(frozen=True)
class CoPEOptions:
    npos: int = 64  # rows of the position table: contextual positions from 0 to npos − 1 (larger ones clamp)

    def __post_init__(self) -> None:
        if self.npos < 2:
            raise ValueError(f"positional.cope.npos must be >= 2, got {self.npos}")


def interpolated(logits: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """logits (B, H, Tq, npos): q_i·e[p] for every integer p; positions (B, H, Tq, Tk) fractional, in [0, npos − 1]
    -> (B, H, Tq, Tk): the logits read between ⌊p⌋ and ⌈p⌉ (the reference's linear interpolation)."""
    floor = positions.floor()
    weight = positions - floor  # differentiable through the gates
    low = logits.gather(-1, floor.long())
    high = logits.gather(-1, positions.ceil().long())
    return low * (1 - weight) + high * weight


class ContextualPositions(PositionalEncoding):
    """One layer's CoPE: its ``content_bias`` is q_i·e[p_ij] / √Dh (module docstring)."""

    def __init__(self, *, d_model: int, n_heads: int, causal: bool, npos: int) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal)
        self.npos = npos
        self.table = nn.Parameter(torch.zeros(self.head_dim, npos))  # e (Dh, npos), shared by the heads

    def content_bias(self, x, q, k, cache=None):
        n, total = q.shape[2], k.shape[2]
        scale = 1 / math.sqrt(self.head_dim)
        gates = torch.sigmoid(q @ k.transpose(-2, -1) * scale)  # (B, H, n, Tk)
        i = torch.arange(total - n, total, device=q.device)[:, None]  # each query's index among the keys
        j = torch.arange(total, device=q.device)[None, :]
        left = gates.masked_fill(j > i, 0.0).flip(-1).cumsum(-1).flip(-1)  # Σ_{k=j}^{i} g_ik for j ≤ i
        looks_right = right_looking_heads(self.n_heads, q.device)  # (H, 1, 1)
        if self.causal:
            positions = left
        else:  # odd heads look right: Σ_{k=i}^{j} g_ik for j ≥ i
            right = gates.masked_fill(j < i, 0.0).cumsum(-1)
            positions = torch.where(looks_right, right, left)
        positions = positions.clamp(max=self.npos - 1)
        bias = interpolated(q @ self.table.to(q.dtype), positions) * scale  # (B, H, n, Tk)
        if self.causal:
            return bias  # the causal mask hides j > i
        return bias.masked_fill(torch.where(looks_right, j < i, j > i), float("-inf"))


class CoPEPositionalEncoding(PositionalEncoding):
    """A position table per layer (``layer(i)``), as the reference (``--cope-shared`` off)."""

    Options = CoPEOptions
    source = "Golovneva et al. 2024, arXiv 2405.18719; reference code facebookresearch/RAM projects/cope"

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, npos: int) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.npos = npos
        self.tables = nn.ModuleList(ContextualPositions(d_model=d_model, n_heads=n_heads, causal=causal, npos=npos)
                                    for _ in range(n_layers))

    def layer(self, index: int) -> PositionalEncoding:
        return self.tables[index]

    def describe(self, usage: Usage) -> str:
        longest = usage.longest_train  # a query sees at most that many open gates: positions 0..longest
        reach = (f"its table of {self.npos} positions covers every training row (at most {longest} tokens, so at "
                 f"most that many open gates: rows 0..{longest})" if self.npos == longest + 1 else
                 f"its table of {self.npos} positions covers every training row (at most {longest} tokens, so at most "
                 f"that many open gates); its rows past {longest} never train, so a count past it at evaluation "
                 "reads an untrained row" if self.npos > longest + 1 else
                 f"its table of {self.npos} positions is shorter than the longest training row needs ({longest} "
                 f"tokens: {longest + 1} rows): a count of open gates past {self.npos - 1} reads the last row")
        encoder = ("" if self.causal else "; in an encoder the even heads count to the left and the odd heads to the "
                   "right (the paper is causal; pelab's `alibi` convention)")
        return f"a position table per layer shared by its heads, zero at the start (NoPE); {reach}{encoder}."
