"""**Permutation word problem** (state tracking; Liu et al. 2023, Transformers Learn Shortcuts to Automata,
https://arxiv.org/abs/2210.10749; Merrill et al. 2024, The Illusion of State in State-Space Models,
https://arxiv.org/abs/2404.08819): a word of n permutations of three objects (elements of the group S3, one token
each), the answer the permutation they compose to, applied left to right: the state of a six-state automaton after
reading the word. S3 is the smallest group whose product depends on the order of its factors, so the order matters;
the sign of the product (odd or even) does not, and is parity: the count of odd factors decides it. Its floor is
not chance: for each count of the six elements the product most often right, fitted on 2,048 words and scored on
2,048 others, or the commonest product of the bag's sign where that scores higher; neither needs the order (1 at
n = 1, about 1/3 from n = 6 on: the sign, and a guess among the three products that have it).

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import functools
import itertools
from typing import ClassVar

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems.base import Problem, distinct_rows

# S3's elements, each as the images (p(0), p(1), p(2)), in lexicographic order: token i is ELEMENTS[i]
ELEMENTS: tuple[tuple[int, int, int], ...] = tuple(itertools.permutations(range(3)))


def _sign(p: tuple[int, ...]) -> int:
    """0 for an even permutation, 1 for an odd one (the parity of its inversions)."""
    return sum(p[i] > p[j] for i in range(len(p)) for j in range(i + 1, len(p))) % 2


# COMPOSE[a, b]: the token of "a, then b" (x -> b(a(x))), the automaton's transition from state a on letter b
COMPOSE = torch.tensor([[ELEMENTS.index(tuple(b[a[x]] for x in range(3))) for b in ELEMENTS] for a in ELEMENTS])
SIGN = torch.tensor([_sign(p) for p in ELEMENTS])  # (6,): 1 where the element is odd (a transposition)


class Permutation(Problem):
    """The S3 word problem (Liu et al. 2023, https://arxiv.org/abs/2210.10749, and their S5 experiments; Merrill
    et al. 2024, https://arxiv.org/abs/2404.08819, whose S5 is NC¹-complete where S3, solvable, is not): n letters
    drawn uniformly from the group's six elements, the answer (one token) their product p_1 · p_2 · … · p_n, composed
    left to right (first p_1, then p_2). Liu et al.'s automaton reads every prefix; here only the last state is asked
    for, as CoPE's and flip-flop's queries are (the encoder reads it at a blank, the decoder writes it after the
    separator). Tokens: the six elements (``ELEMENTS``), which are also the answers.

    S5's 120 elements would make the NC¹-complete problem of the papers, at a vocabulary of 120 tokens that the
    smoke and quick sizes cannot learn; S3 keeps the property that matters to positions (the product depends on the
    order, its sign does not) at six."""

    name = "permutation"
    draws_sources = True
    SYMBOLS: ClassVar[int] = len(ELEMENTS)

    def symbols(self, cfg: LengthDataConfig) -> int:
        return self.SYMBOLS

    def alphabet(self, n_symbols: int) -> int:
        return self.SYMBOLS

    def answer_length(self, n: int) -> int:
        return 1

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        return self.SYMBOLS ** n

    def words(self, n: int, b: int, generator: torch.Generator) -> torch.Tensor:
        """b words of n letters, uniform over S3: (b, n)."""
        return torch.randint(self.SYMBOLS, (b, n), generator=generator)

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        if count > self.capacity(cfg, n) - len(exclude):
            raise ValueError(f"permutation: cannot draw {count} distinct words of {n} letters")
        return distinct_rows(lambda b: self.words(n, b, generator), count, n, exclude)

    def question_answer(self, sources: torch.Tensor, symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, n): the letters -> question (the same), answer (B, 1): their product, left to right."""
        return sources, product(sources)[:, None]

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """The strongest answer that reads no order: for each count of the six letters (the word as a bag), the
        product most often right, fitted on 2,048 words and scored on 2,048 others (fixed generators, so the same
        number every time; a bag the fit never saw answered by its sign's rule), or, for each sign of the bag (the
        parity of its odd letters, which the product shares), its commonest product, where that scores higher."""
        return _permutation_floor(self, n)


def product(words: torch.Tensor) -> torch.Tensor:
    """words (B, n) of element tokens -> (B,): the token of p_1 · … · p_n, composed left to right."""
    state = words[:, 0]
    for i in range(1, words.shape[1]):
        state = COMPOSE[state, words[:, i]]
    return state


@functools.lru_cache(maxsize=None)
def _permutation_floor(problem: Permutation, n: int) -> float:
    def bag(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(counts of each element (2048, 6), the product) per word."""
        words = problem.words(n, 2048, torch.Generator().manual_seed(seed))
        return torch.nn.functional.one_hot(words, problem.SYMBOLS).sum(1), product(words)

    (fit, answer), (scored, scored_answer) = bag(n), bag(n + 1_000_003)
    keys, index = torch.cat([fit, scored]).unique(dim=0, return_inverse=True)  # each bag seen, numbered
    table = torch.zeros(len(keys), problem.SYMBOLS, dtype=torch.long).index_put_(
        (index[:len(fit)], answer), torch.ones_like(answer), accumulate=True)
    sign = (keys * SIGN).sum(1) % 2  # (bags,): the product's sign, read from the bag
    # the commonest product of each sign in the fit (the fallback of a bag the fit never saw)
    by_sign = torch.stack([torch.bincount(answer[(fit * SIGN).sum(1) % 2 == s], minlength=problem.SYMBOLS)
                           for s in (0, 1)])
    signed = by_sign.argmax(1)[sign]
    fitted = table.argmax(1).where(table.sum(1) > 0, signed)
    scored_index = index[len(fit):]
    return max(float((rule[scored_index] == scored_answer).float().mean()) for rule in (fitted, signed))


PROBLEM = Permutation()
