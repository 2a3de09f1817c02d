"""The problems of the length study: a source string -> (question, answer), both token rows.

A problem of *length n* has an input of n symbols (binary addition: two n-bit numbers). Vocabulary: the
symbols 0..k-1, then ``SEP`` (ends the question), ``BLANK`` (an answer slot of the encoder layout) and ``PLUS``
(binary addition). Ruoss et al. 2023 (https://arxiv.org/abs/2305.16843), Table 4: reverse string, duplicate
string, binary addition.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def special_tokens(n_symbols: int) -> dict[str, int]:
    return {"sep": n_symbols, "blank": n_symbols + 1, "plus": n_symbols + 2}


def vocab_size(n_symbols: int) -> int:
    return n_symbols + 3


@dataclass(frozen=True)
class Problem:
    name: str
    binary: bool = False  # the alphabet is {0, 1} whatever data.n_symbols says

    def alphabet(self, n_symbols: int) -> int:
        return 2 if self.binary else n_symbols

    def source_length(self, n: int) -> int:
        """Symbols drawn for one example of length n."""
        return 2 * n if self.name == "addition" else n

    def answer_length(self, n: int) -> int:
        return {"reverse": n, "duplicate": 2 * n, "addition": n + 1}[self.name]

    def question_answer(self, sources: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, source_length(n)) -> question (B, q), answer (B, answer_length(n))."""
        if self.name == "reverse":
            return sources, sources.flip(1)
        if self.name == "duplicate":
            return sources, torch.cat([sources, sources], dim=1)
        if self.name == "addition":
            return binary_addition(sources, special_tokens(n_symbols)["plus"])
        raise ValueError(f"unknown problem {self.name!r}; valid choices: {', '.join(PROBLEMS)}")


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


PROBLEMS = {"reverse": Problem("reverse"), "duplicate": Problem("duplicate"),
            "addition": Problem("addition", binary=True)}
