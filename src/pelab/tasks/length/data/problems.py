"""The problems of the length study: a source string -> (question, answer), both token rows.

A problem of *length n* has an input of n symbols (binary addition: two n-bit numbers). Vocabulary: the
symbols 0..k-1, then ``SEP`` (ends the question), ``BLANK`` (an answer slot of the encoder layout) and ``PLUS``
(binary addition). Ruoss et al. 2023 (https://arxiv.org/abs/2305.16843), Table 4: reverse string, duplicate
string, binary addition.
"""

from __future__ import annotations

from typing import ClassVar

import torch


def special_tokens(n_symbols: int) -> dict[str, int]:
    return {"sep": n_symbols, "blank": n_symbols + 1, "plus": n_symbols + 2}


def vocab_size(n_symbols: int) -> int:
    return n_symbols + 3


class Problem:
    """One problem of the length study. Adding a problem is one subclass here, listed in ``PROBLEMS``: the
    registry then has its two tasks (``<name>``, bidirectional, and ``<name>_causal``), as a task of DeepMind's
    randomized positional encodings is one class (github.com/google-deepmind/randomized_positional_encodings,
    ``tasks/``)."""

    name: ClassVar[str]
    binary: ClassVar[bool] = False  # the alphabet is {0, 1} whatever data.n_symbols says

    def alphabet(self, n_symbols: int) -> int:
        return 2 if self.binary else n_symbols

    def source_length(self, n: int) -> int:
        """Symbols drawn for one example of length n."""
        return n

    def question_length(self, n: int) -> int:
        return self.source_length(n)

    def answer_length(self, n: int) -> int:
        raise NotImplementedError

    def question_answer(self, sources: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, source_length(n)) -> question (B, question_length(n)), answer (B, answer_length(n))."""
        raise NotImplementedError


class Reverse(Problem):
    name = "reverse"

    def answer_length(self, n: int) -> int:
        return n

    def question_answer(self, sources: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        return sources, sources.flip(1)


class Duplicate(Problem):
    name = "duplicate"

    def answer_length(self, n: int) -> int:
        return 2 * n

    def question_answer(self, sources: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        return sources, torch.cat([sources, sources], dim=1)


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


PROBLEMS: dict[str, Problem] = {problem.name: problem for problem in (Reverse(), Duplicate(), Addition())}
