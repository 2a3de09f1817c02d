"""``t5``: learned relative-position bias per head over log-spaced distance buckets
(Raffel et al. 2020, §2.1, https://arxiv.org/abs/1910.10683). Bidirectional buckets in an encoder,
unidirectional in a causal decoder; one table shared by all layers of a stack, as in T5."""

from __future__ import annotations

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding
from pelab.positional.functional import relative_distances, t5_relative_position_bucket


class T5RelativePositionalEncoding(PositionalEncoding):
    def __init__(
        self,
        *,
        d_model: int,
        n_heads: int,
        causal: bool = False,
        num_buckets: int = 32,
        max_distance: int = 128,
        **_: object,
    ) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal)
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.table = nn.Embedding(num_buckets, n_heads)  # (buckets, H)
        nn.init.normal_(self.table.weight, std=0.02)

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        buckets = t5_relative_position_bucket(
            relative_distances(q_pos, k_pos),
            bidirectional=not self.causal,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )  # (Tq, Tk)
        return self.table(buckets).permute(2, 0, 1)  # (H, Tq, Tk)
