"""Similarity between the position vectors of a table (the copy-task post's dot-product and cosine matrices)."""

from __future__ import annotations

import torch

def position_similarity(table: torch.Tensor) -> dict[str, torch.Tensor]:
    """table: (P, D) -> {"dot": (P, P) PE(i)·PE(j), "cosine": (P, P) cos∠(PE(i), PE(j))}."""
    table = table.double()
    dot = table @ table.T
    unit = table / table.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return {"dot": dot, "cosine": unit @ unit.T}


def mean_by_offset(matrix: torch.Tensor, max_offset: int | None = None) -> torch.Tensor:
    """Mean of matrix[i, i + Δ] over i, for Δ = 0..max_offset (default P−1): (max_offset+1,)."""
    p = matrix.shape[0]
    max_offset = p - 1 if max_offset is None else min(max_offset, p - 1)
    return torch.stack([matrix.diagonal(delta).mean() for delta in range(max_offset + 1)])


def neighbour_cosine(cosine: torch.Tensor) -> float:
    """Mean cosine similarity of neighbouring positions (offset 1) from a (P, P) cosine matrix."""
    return float(mean_by_offset(cosine, 1)[1])
