"""``sandwich``: the parameter-free kernel bias of Chi et al. 2023 ("Dissecting Transformer Length Extrapolation via
the Lens of Receptive Field Analysis", https://arxiv.org/abs/2212.10356, §5): the inner product of two sinusoidal
position embeddings, compressed per head as ALiBi's slopes compress its distance.

    b_h(i, j) = ( Σ_{k=1}^{d'/2} cos((i − j) / 10000^{2k/d'}) − d'/2 ) / (8h / H),   h = 1..H,

with d' the head dimension. The sum is p_i·p_j for sinusoidal embeddings p with frequencies 10000^{−2k/d'}, so the
bias is 0 on the diagonal, ≤ 0 elsewhere and decays (not monotonically) with distance; the −d'/2 is a constant per
row (no effect under the softmax). No code of the authors is public; this follows NVIDIA NeMo's
``SandwichRelativePositionEmbedding`` (``nemo/collections/nlp/modules/common/megatron/position_embedding/
sandwich_relative_position_embedding.py``): k from 1 to d'/2, head h divided by 8h/H (linear in h, not ALiBi's
geometric slopes), added to the scaled logits.

The kernel is even in i − j. In a bidirectional encoder it would not tell left from right, so, as pelab's ``alibi``
and ``kerple``, the even heads look left (keys to the right masked) and the odd heads right.
"""

from __future__ import annotations

import torch

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.kerple import directed_distances


def sandwich_kernel(distance: torch.Tensor, dim: int) -> torch.Tensor:
    """distance (...) -> Σ_{k=1}^{dim/2} cos(distance / 10000^{2k/dim}) − dim/2, the same shape (≤ 0, 0 at 0)."""
    k = torch.arange(1, dim // 2 + 1, dtype=distance.dtype, device=distance.device)  # (dim/2,)
    inverse_frequencies = 10000.0 ** (-2.0 * k / dim)
    return (distance[..., None] * inverse_frequencies).cos().sum(-1) - dim // 2


class SandwichPositionalEncoding(PositionalEncoding):
    source = "Chi et al. 2023, arXiv 2212.10356; as NVIDIA NeMo SandwichRelativePositionEmbedding"

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        compression = 8.0 * torch.arange(1, n_heads + 1, dtype=torch.float32) / n_heads  # (H,): 8h/H
        self.register_buffer("compression", compression, persistent=False)

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = directed_distances(q_pos, k_pos, self.n_heads, self.causal)  # (H, Tq, Tk), −1: unwatched side
        watched = distance.clamp(min=0.0).long()
        # the kernel once per distance, then read per pair: (H, T, T, Dh/2) cosines would be GBs at T = 2048
        kernel = sandwich_kernel(torch.arange(int(watched.max()) + 1, dtype=torch.float32, device=watched.device),
                                 self.head_dim)  # (max distance + 1,)
        bias = kernel[watched] / self.compression[:, None, None]
        return bias.masked_fill(distance < 0, float("-inf"))

    def describe(self, usage: Usage) -> str | None:
        if self.causal:
            return None
        return ("in an encoder the even heads look left and the odd heads right (its kernel is even in i − j; the "
                "paper is causal; pelab's `alibi` convention).")
