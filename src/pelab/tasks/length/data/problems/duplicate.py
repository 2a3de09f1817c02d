"""``duplicate``: string duplication (Ruoss et al. 2023, Table 4); a problem of the length study, found by its
``PROBLEM`` (``problems/__init__.py``)."""

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
