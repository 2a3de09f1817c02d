"""``learned``: a trainable table of absolute position vectors added to the embeddings
(Gehring et al. 2017, https://arxiv.org/abs/1705.03122; BERT/GPT-2). It cannot encode positions
beyond ``max_positions``: asking for them is an error, as in nanoGPT's block-size check.

Initial scale (option ``init``). Token embeddings enter the model scaled by √d (Vaswani et al. 2017, §3.4), so
a token row has norm ≈ √d, and a sinusoidal row has norm √(d/2) exactly. GPT-2/BERT's std 0.02 would give a
learned row norm 0.02·√d (≈ 0.23 at d = 128): about 50× weaker than the tokens and 35× weaker than the
sinusoidal table it is compared with. The default ``sinusoidal_norm`` draws N(0, 1/2) entries, so a row
starts with norm ≈ √(d/2), like the sinusoidal rows; ``gpt2`` keeps std 0.02 (the report shows both)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage

INIT_STDS = {
    "sinusoidal_norm": math.sqrt(0.5),  # E‖row‖² = d/2: a sinusoidal row's norm
    "gpt2": 0.02,  # GPT-2 / BERT initialisation of position tables
}


@dataclass(frozen=True)
class LearnedOptions:
    max_positions: int = 128  # rows of the table: >= every length the scheme is evaluated on
    init: str = "sinusoidal_norm"  # initial scale of the rows: sinusoidal_norm | gpt2

    def __post_init__(self) -> None:
        if self.max_positions < 1:
            raise ValueError(f"positional.learned.max_positions must be >= 1, got {self.max_positions}")
        if self.init not in INIT_STDS:
            raise ValueError(f"unknown positional.learned.init {self.init!r}; valid choices: {', '.join(INIT_STDS)}")


class LearnedPositionalEncoding(PositionalEncoding):
    Options = LearnedOptions

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, max_positions: int,
                 init: str) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.max_positions = max_positions
        self.init = init
        self.table = nn.Embedding(max_positions, d_model)  # (P, D)
        nn.init.normal_(self.table.weight, std=INIT_STDS[init])

    def check_length(self, length: int) -> None:
        if length > self.max_positions:
            raise ValueError(
                f"learned position table has {self.max_positions} rows, cannot encode a sequence of length "
                f"{length}; raise positional.max_positions to at least {length}"
            )

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # per-seed positions under vmap (``rand_learned`` in a stack of seeds) cannot be read; the randomized wrapper
        # has checked their range [0, max_position) against the table when it was built
        if positions.is_cuda and torch.cuda.is_current_stream_capturing():
            # a CUDA graph cannot read a value; its positions are 0..T-1 (``training.graphs`` captures no drawn ones)
            self.check_length(positions.numel())
        elif not torch._C._functorch.is_batchedtensor(positions):
            self.check_length(int(positions.max()) + 1)
        return x + self.table(positions)[None]  # (1, T, D)

    def describe(self, usage: Usage) -> str:
        init = ("rows start at the sinusoidal row norm √(d/2), not at GPT-2's std 0.02, which would start them 35× "
                "weaker than the sinusoidal table" if self.init == "sinusoidal_norm" else
                "GPT-2's std 0.02: rows start about 35× weaker than the sinusoidal table")
        beyond = ("so beyond it the model reads rows at their random initialisation" if usage.longest_eval >
                  usage.longest_train else "and no evaluation reads them")
        return (f"init `{self.init}` ({init}); {self.max_positions} rows, so that every evaluated position has one; "
                f"rows past the longest training row ({usage.longest_train} positions) never receive a gradient "
                f"(nor, like every positional parameter, weight decay), {beyond}.")
