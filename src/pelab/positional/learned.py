"""``learned``: a trainable table of absolute position vectors added to the embeddings
(Gehring et al. 2017, https://arxiv.org/abs/1705.03122; BERT/GPT-2). It cannot encode positions
beyond ``max_positions``: asking for them is an error, as in nanoGPT's block-size check."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding

INIT_STD = 0.02  # GPT-2 / BERT initialisation of position tables


@dataclass(frozen=True)
class LearnedOptions:
    max_positions: int = 128  # rows of the table: >= every length the scheme is evaluated on

    def __post_init__(self) -> None:
        if self.max_positions < 1:
            raise ValueError(f"positional.learned.max_positions must be >= 1, got {self.max_positions}")


class LearnedPositionalEncoding(PositionalEncoding):
    Options = LearnedOptions

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, max_positions: int = 128) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal)
        self.max_positions = max_positions
        self.table = nn.Embedding(max_positions, d_model)  # (P, D)
        nn.init.normal_(self.table.weight, std=INIT_STD)

    def check_length(self, length: int) -> None:
        if length > self.max_positions:
            raise ValueError(
                f"learned position table has {self.max_positions} rows, cannot encode a sequence of length "
                f"{length}; raise positional.max_positions to at least {length}"
            )

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        self.check_length(int(positions.max()) + 1)
        return x + self.table(positions)[None]  # (1, T, D)
