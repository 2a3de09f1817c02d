"""**Indirect indexing** (Gopalakrishnan et al. 2025, PoPE, https://arxiv.org/abs/2509.10534): n distinct keys,
then each key once as a query with an offset o in 1..3; the answer is the key o places to its left, or `none` where
that falls before the row's start. Content finds the query's key, position alone the answer. Its floor is not
chance: always answering `none`, or a key of the row other than the query's, scores the better of the two (high at
small n, where most offsets fall before the start).

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems.base import Problem, distinct_rows
from pelab.tasks.length.data.tokens import IGNORE, special_tokens


class IndirectIndexing(Problem):
    """Indirect indexing (Gopalakrishnan et al. 2025, PoPE, https://arxiv.org/abs/2509.10534, §4.1: find the token k
    places to the left of a given token): a row of n distinct keys, then each key once as a query (in random order),
    each with an offset o in 1..``OFFSETS``; the answer to (key, o) is the key o places to its left, or ``none``
    where that falls before the row's start. Content finds the query's key, position alone finds the answer: the
    what/where split PoPE is built for.

    Keys are drawn without replacement from K = max(data.n_symbols, data.test_max) tokens (as recall's), so every
    evaluated n fits; then the ``OFFSETS`` offset tokens and ``none``. Layouts as recall's, with a query two
    tokens: encoder ``row SEP k1 o1 _ k2 o2 _ …``, decoder ``row SEP k1 o1 a1 k2 o2 a2 …``."""

    name = "indirect"
    draws_sources = True
    interleaved = True
    OFFSETS: ClassVar[int] = 3

    def keys(self, cfg: LengthDataConfig) -> int:
        return max(cfg.n_symbols, cfg.test_max)

    def alphabet(self, n_symbols: int) -> int:
        raise TypeError("indirect's alphabet depends on data.test_max: use answer_alphabet(cfg)")

    def answer_alphabet(self, cfg: LengthDataConfig) -> int:
        return self.keys(cfg) + 1  # a key or none

    def none_share(self, n: int) -> float:
        """The share of a row's n queries whose answer is ``none``: key i (0-based) with o > i, o uniform."""
        return sum(max(0, self.OFFSETS - i) for i in range(n)) / (self.OFFSETS * n)

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """The better of two answers that read no position: always ``none``, or a key of the row other than the
        query's own, drawn uniformly (right with probability 1/(n − 1) where the answer is a key)."""
        share = self.none_share(n)
        return max(share, (1 - share) / (n - 1)) if n > 1 else share

    def symbols(self, cfg: LengthDataConfig) -> int:
        return self.keys(cfg) + self.OFFSETS + 1  # keys 0..K-1, offsets 1..OFFSETS, none

    def source_length(self, n: int) -> int:
        return 3 * n

    def answer_length(self, n: int) -> int:
        return n

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        return math.perm(self.keys(cfg), n) * math.factorial(n) * self.OFFSETS**n

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        k = self.keys(cfg)
        if count > self.capacity(cfg, n) - len(exclude):
            raise ValueError(f"indirect: cannot draw {count} distinct rows of {n} keys")

        def candidates(b: int) -> torch.Tensor:
            row = torch.rand(b, k, generator=generator).argsort(1)[:, :n]  # (b, n) distinct keys
            queries = row.gather(1, torch.rand(b, n, generator=generator).argsort(1))
            offsets = torch.randint(k, k + self.OFFSETS, (b, n), generator=generator)  # tokens of 1..OFFSETS
            return torch.cat([row, torch.stack([queries, offsets], 2).flatten(1)], 1)

        return distinct_rows(candidates, count, 3 * n, exclude)

    def question_answer(self, sources: torch.Tensor, symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, 3n): the row, then n (key, offset) pairs -> question (the same), answer (B, n)."""
        n = sources.shape[1] // 3
        k = symbols - self.OFFSETS - 1
        row, queries, offsets = sources[:, :n], sources[:, n::2], sources[:, n + 1::2] - k + 1  # offsets 1..
        where = (row.unsqueeze(1) == queries.unsqueeze(2)).int().argmax(-1)  # (B, n): each query's index
        target = where - offsets
        answer = row.gather(1, target.clamp(min=0))
        return sources, answer.masked_fill(target < 0, symbols - 1)

    def rows(self, question: torch.Tensor, answer: torch.Tensor, symbols: int,
             causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """question (B, 3n), answer (B, n) -> (tokens, targets): encoder ``row SEP k1 o1 _ …`` (B, 4n + 1), read at
        the blanks; decoder ``row SEP k1 o1 a1 … kn on`` (B, 4n), answer j predicted at offset j."""
        tokens = special_tokens(symbols)
        b, n = answer.shape
        row, pairs = question[:, :n], question[:, n:].reshape(b, n, 2)
        slots = answer if causal else torch.full_like(answer, tokens["blank"])
        tail = torch.cat([pairs, slots[..., None]], 2).flatten(1)  # k1 o1 a1 k2 o2 a2 …
        ignore_pair = torch.full((b, n, 1), IGNORE, dtype=torch.long)
        if causal:  # the offset's position predicts the answer
            read = torch.cat([ignore_pair, answer[..., None], ignore_pair], 2).flatten(1)
        else:  # the blank's
            read = torch.cat([ignore_pair, ignore_pair, answer[..., None]], 2).flatten(1)
        sep = torch.full((b, 1), tokens["sep"], dtype=torch.long)
        ignore = torch.full((b, n + 1), IGNORE, dtype=torch.long)
        tokens_, targets = torch.cat([row, sep, tail], 1), torch.cat([ignore, read], 1)
        if causal:  # the last answer is never an input
            tokens_, targets = tokens_[:, :-1], targets[:, :-1]
        return tokens_, targets


PROBLEM = IndirectIndexing()
