"""**Reversal** (Ruoss et al. 2023, https://arxiv.org/abs/2305.16843, Table 4): the answer is the input string
reversed. The j-th answer symbol reads the j-th symbol from the input's end: a distance that grows with j, up to
about 2n.

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import torch

from pelab.tasks.length.data.problems.base import Problem


class Reverse(Problem):
    name = "reverse"

    def answer_length(self, n: int) -> int:
        return n

    def question_answer(self, sources: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        return sources, sources.flip(1)


PROBLEM = Reverse()
