"""**Duplication** (Ruoss et al. 2023, https://arxiv.org/abs/2305.16843, Table 4): the answer is the input
string twice. Each answer symbol copies the symbol about n places before it (an input symbol for the first copy,
its own answer for the second): a distance that grows with the length.

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import torch

from pelab.tasks.length.data.problems.base import Problem


class Duplicate(Problem):
    name = "duplicate"

    def answer_length(self, n: int) -> int:
        return 2 * n

    def question_answer(self, sources: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        return sources, torch.cat([sources, sources], dim=1)


PROBLEM = Duplicate()
