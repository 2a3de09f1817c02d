"""The base of every problem of the length study (``problems/__init__.py`` says how they are found) and what
they share."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from functools import cache
from typing import ClassVar

import numpy as np
import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.layout import decoder_rows, encoder_rows
from pelab.tasks.length.data.tokens import special_tokens, vocab_size


class Problem:
    """One problem of the length study. Adding a problem is one module of this package, named like the problem, with
    its subclass and ``PROBLEM`` (its instance): the registry then has its two tasks (``problems/__init__.py``)."""

    name: ClassVar[str]
    binary: ClassVar[bool] = False  # the alphabet is {0, 1} whatever data.n_symbols says
    draws_sources: ClassVar[bool] = False  # sources from ``draw``, not uniform strings over the alphabet
    # the decoder's answers sit between the queries (``q1 a1 q2 a2 …``: recall), not after the question
    interleaved: ClassVar[bool] = False
    # a retrieval task: the report asks whether each scheme retrieves at every trained length (effective length >= N)
    retrieval: ClassVar[bool] = False

    @property
    def statement(self) -> str:
        """What the problem is, as the report prints it: its module's docstring up to the first blank line (which a
        kept run's fingerprint leaves out, ``closure.training_source``: editing it retrains nothing)."""
        doc = sys.modules[type(self).__module__].__doc__ or ""
        return " ".join(doc.split("\n\n", 1)[0].split())

    def alphabet(self, n_symbols: int) -> int:
        """Distinct values of an answer symbol (chance is one over it)."""
        return 2 if self.binary else n_symbols

    def answer_alphabet(self, cfg: LengthDataConfig) -> int:
        return self.alphabet(cfg.n_symbols)

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float | None:
        """The token accuracy at length n of answering from the row's own symbols without reading which goes where,
        where that beats chance (1 / ``answer_alphabet``); None: chance is the floor."""
        return None

    def symbols(self, cfg: LengthDataConfig) -> int:
        """Tokens below the special ones (``special_tokens``): what ``question_answer`` and the layouts are given."""
        return cfg.n_symbols

    def vocab_size(self, cfg: LengthDataConfig) -> int:
        return vocab_size(self.symbols(cfg))

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        """``count`` distinct sources of length n (none in ``exclude``), where ``draws_sources``."""
        raise NotImplementedError

    def extra_splits(self, cfg: LengthDataConfig, generator: torch.Generator) -> dict[str, dict[int, torch.Tensor]]:
        """Test splits beyond ``test`` (split -> length -> sources), drawn after it; none by default."""
        return {}

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        """Distinct sources of length n."""
        return self.alphabet(cfg.n_symbols) ** self.source_length(n)

    def rows(self, question: torch.Tensor, answer: torch.Tensor, symbols: int,
             causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, targets) of the task's layout (``layout.py``): the answer after the question."""
        return (decoder_rows if causal else encoder_rows)(question, answer, symbols)

    def hidden(self, tokens: torch.Tensor, symbols: int) -> torch.Tensor | None:
        """tokens (B, T) of ``rows`` -> (B, T) bool, True at the filler a masked-distractor reading hides from
        attention (recall's spread rows: the slots that hold no pair); None: the problem has no filler."""
        return None

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


def distinct_rows(candidates: Callable[[int], torch.Tensor], count: int, width: int,
                  exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
    """``count`` distinct rows (count, width), none in ``exclude``, kept in the order drawn from batches
    ``candidates(b)`` (b, width) of twice the rows still missing (a problem's ``draw``)."""
    out, seen = [], set(exclude)
    while len(out) < count:
        for row in candidates(2 * (count - len(out))).tolist():
            if tuple(row) not in seen and len(out) < count:
                seen.add(tuple(row))
                out.append(row)
    return torch.tensor(out, dtype=torch.long).reshape(count, width)


@cache
def commonest_share(k: int, n: int) -> float:
    """E[c_max]/n: the expected share of the commonest symbol among n drawn uniformly, with replacement, from k; what
    answering every answer slot with the row's commonest symbol scores, reading the row as a bag (no order). Exact:
    P(c_max <= m) = n!/k^n [x^n] (sum_{j<=m} x^j/j!)^k (the multinomial's generating function), and
    E[c_max] = sum_{m>=1} P(c_max >= m)."""
    if n <= 0:
        return 0.0
    weight = math.exp(math.lgamma(n + 1) - n * math.log(k))  # n!/k^n

    def at_most(m: int) -> float:
        term = np.array([1.0 / math.factorial(j) for j in range(min(m, n) + 1)])
        power, base, e = np.array([1.0]), term, k
        while e:  # (sum_{j<=m} x^j/j!)^k by squaring, truncated at degree n
            if e & 1:
                power = np.convolve(power, base)[:n + 1]
            base, e = np.convolve(base, base)[:n + 1], e >> 1
        return float(power[n]) * weight if len(power) > n else 0.0

    return sum(1.0 - at_most(m - 1) for m in range(1, n + 1)) / n
