"""Summaries of attention weights the report states: the copy alignment of a head and the weight near the
diagonal."""

from __future__ import annotations

import torch

def copy_alignment(weights: torch.Tensor, n_digits: int) -> torch.Tensor:
    """Mean attention that output position n+1+i puts on its source digit i, i = 0..n−1: (L, H).

    A head that implements the copy puts all its weight there (1.0); uniform attention gives 1/T.
    """
    queries = torch.arange(n_digits) + n_digits + 1
    sources = torch.arange(n_digits)
    return weights[:, :, queries, sources].mean(-1)


def local_mass(weights: torch.Tensor, width: int = 1) -> torch.Tensor:
    """Mean over queries of the attention weight on keys within ``width`` positions of the query.

    weights (..., T, T) -> (...): 1 when attention stays on the diagonal band (the C05 report's
    "mainly concentrated on the diagonal"), about (2·width + 1)/T for uniform attention.
    """
    t = weights.shape[-1]
    offsets = torch.arange(t)[None, :] - torch.arange(weights.shape[-2])[:, None]
    return (weights * (offsets.abs() <= width)).sum(-1).mean(-1)
