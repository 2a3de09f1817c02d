"""Randomized positional encodings (Ruoss et al. 2023, https://arxiv.org/abs/2305.16843), as a wrapper around
any scheme that reads positions.

A sequence of length T is given, instead of 0..T−1, a sorted subset of T distinct positions drawn uniformly
from [0, ``max_position``) (the paper's L ≫ the test lengths). Training thus sees every position up to L and
every gap between them, and a longer test sequence uses positions the model was trained on. The wrapped
scheme is unchanged: its hooks receive the drawn positions.

Evaluation draws them too, as in the paper, from a generator seeded with the sequence length and a draw
index, so every run and every scheme is scored with the same positions for a given length and draw
(``sample_positions``; the length tasks average over several draws, ``tasks/length/evaluate.py``).

Only models that ask the scheme for their positions (``sample_positions``) randomize: the length tasks. A task
whose model does not is refused when params load (``pelab.tasks.base.Task.check``).
"""

from __future__ import annotations

from dataclasses import field, make_dataclass
from functools import cache
from typing import Any

import torch

from pelab.positional.base import PositionalEncoding


class RandomizedPositions(PositionalEncoding):
    """The scheme of class ``inner`` with randomized positions (a spec's ``randomized: true``, ``registry``); its
    options are the inner scheme's and ``max_position`` (``randomized_options``)."""

    graph_safe = False  # training draws positions on the host (``torch.randperm``): a replay would repeat one draw

    def __init__(self, inner: type[PositionalEncoding], *, d_model: int, n_heads: int, causal: bool = False,
                 n_layers: int = 1, max_position: int, **inner_options: Any) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.max_position = max_position
        self.inner = inner(d_model=d_model, n_heads=n_heads, causal=causal, **inner_options)
        self.inner.check_length(max_position)  # e.g. a learned table needs max_position rows

    def sample_positions(self, length: int, device: torch.device | str = "cpu", draw: int = 0) -> torch.Tensor:
        """(length,) sorted distinct positions in [0, max_position): fresh in training (the global RNG, seeded per
        run), fixed per (length, draw) at evaluation."""
        self.check_length(length)
        generator = None if self.training else torch.Generator().manual_seed(length + 1_000_003 * draw)
        drawn = torch.randperm(self.max_position, generator=generator)[:length]
        return drawn.sort().values.to(device)

    def check_length(self, length: int) -> None:
        if length > self.max_position:
            raise ValueError(f"randomized positions draw from [0, {self.max_position}) and cannot place a sequence "
                             f"of length {length}; raise the scheme's max_position to at least {length}")

    def embed(self, x, positions):
        return self.inner.embed(x, positions)

    def rotate(self, q, k, q_pos, k_pos):
        return self.inner.rotate(q, k, q_pos, k_pos)

    def bias(self, q_pos, k_pos):
        return self.inner.bias(q_pos, k_pos)

    def rotation_frequencies(self):
        return self.inner.rotation_frequencies()

    def describe(self, usage):
        return (f"a row of T tokens gets a sorted random subset of T positions from [0, {self.max_position}) at every "
                "training batch (Ruoss et al. 2023), and fixed draws per length at evaluation.")

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, max_position={self.max_position}"


@cache
def randomized_options(inner: type[PositionalEncoding]) -> type:
    """The options of ``inner``'s scheme with randomized positions: its own and ``max_position`` (default 512), one
    dataclass per inner class (a spec's defaults replace the inner ones: ``registry.scheme_options``)."""
    return make_dataclass(f"Randomized{inner.Options.__name__}", [("max_position", int, field(default=512))],
                          bases=(inner.Options,), frozen=True, namespace={"check": _check})


def _check(self, where: str) -> None:
    if self.max_position < 1:
        raise ValueError(f"{where}.max_position must be >= 1, got {self.max_position}")


__all__ = ["RandomizedPositions", "randomized_options"]
