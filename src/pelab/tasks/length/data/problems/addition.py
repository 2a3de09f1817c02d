"""**Binary addition** (Ruoss et al. 2023, https://arxiv.org/abs/2305.16843, Table 4): two binary numbers, the
answer their sum. Each answer bit reads two aligned input bits and a carry: alignment by position, and a carry chain
that grows with the length.

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import torch

from pelab.tasks.length.data.problems.base import Problem
from pelab.tasks.length.data.tokens import special_tokens


class Addition(Problem):
    """Two n-bit numbers: the question ``a + b`` (2n + 1 tokens), the answer their sum in n + 1 bits."""

    name = "addition"
    binary = True

    def source_length(self, n: int) -> int:
        return 2 * n

    def question_length(self, n: int) -> int:
        return 2 * n + 1

    def answer_length(self, n: int) -> int:
        return n + 1

    def question_answer(self, sources: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        return binary_addition(sources, special_tokens(n_symbols)["plus"])


def binary_addition(sources: torch.Tensor, plus: int) -> tuple[torch.Tensor, torch.Tensor]:
    """sources (B, 2n) bits, least significant first: a = sources[:, :n], b = sources[:, n:].
    Question ``a + b`` (B, 2n+1); answer a+b in n+1 bits, least significant first (so the answer is produced
    in the order a carry propagates)."""
    n = sources.shape[1] // 2
    a, b = sources[:, :n], sources[:, n:]
    carry = torch.zeros(sources.shape[0], dtype=sources.dtype)
    digits = []
    for i in range(n):
        total = a[:, i] + b[:, i] + carry
        digits.append(total % 2)
        carry = total // 2
    digits.append(carry)
    question = torch.cat([a, torch.full((sources.shape[0], 1), plus, dtype=sources.dtype), b], dim=1)
    return question, torch.stack(digits, dim=1)


PROBLEM = Addition()
