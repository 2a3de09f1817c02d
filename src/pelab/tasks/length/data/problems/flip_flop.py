"""**Flip-flop** (Liu et al. 2023, Exposing Attention Glitches with Flip-Flop Language Modeling,
https://arxiv.org/abs/2306.00946, §3): a program of n instructions, each `w b` (write bit b), `r b` (read: b is the
last bit written) or `i b` (ignore), the first a write, then `r`; the answer is the last bit written. Instructions
are drawn as the paper's FFL(0.8): ignore with probability 0.8, write or read 0.1 each, so the last write lies
about 5 instructions back within N and further beyond it, behind more ignores. Which bit answers depends on which
write came last, so the order matters. Its floor is not chance: for each count of writes and reads of each bit, the
bit most often right, or the bit written more often where that scores higher; neither needs the order (fitted on
2,048 programs and scored on 2,048 others; 1 at n = 1, about 0.76 at 20 instructions and 0.64 at 80).

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import functools
from typing import ClassVar

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems.base import Problem, distinct_rows


class FlipFlop(Problem):
    """Flip-flop language modelling (Liu et al. 2023, https://arxiv.org/abs/2306.00946, §3, Definition 1): strings
    over the instructions write, read and ignore, each with a bit; a read's bit is the last written. FFL(p_i) draws
    each instruction after the first (a write) i.i.d.: ignore with p_i, write and read with (1 − p_i)/2 each, every
    written and ignored bit uniform; the paper trains on FFL(0.8) (its Figure 1) and ends every string with a read.

    Here a problem of length n is n instructions (two tokens each: instruction, bit), the first a write, then the
    query ``r``: 2n + 1 tokens, and the answer (one token) is the bit the last write wrote, what the paper's final
    read must predict. The reads inside the program carry their bits, as in the paper's strings (each repeats the
    write before it). Tokens: the bits 0 and 1 (the answers), then write, read and ignore."""

    name = "flip_flop"
    binary = True
    draws_sources = True
    P_IGNORE: ClassVar[float] = 0.8  # FFL(0.8), the paper's training distribution
    SYMBOLS: ClassVar[int] = 2 + 3  # the bits, then write, read, ignore

    def symbols(self, cfg: LengthDataConfig) -> int:
        return self.SYMBOLS

    @staticmethod
    def verbs(symbols: int) -> tuple[int, int, int]:
        """The write, read and ignore tokens: the last three of ``symbols``."""
        return symbols - 3, symbols - 2, symbols - 1

    def source_length(self, n: int) -> int:
        return 2 * n + 1

    def answer_length(self, n: int) -> int:
        return 1

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        """Distinct programs of n instructions: the first write's bit, then five choices each (a write or an ignore
        of either bit, or the read, whose bit is fixed)."""
        return 2 * 5 ** (n - 1)

    def programs(self, n: int, b: int, generator: torch.Generator) -> torch.Tensor:
        """b programs of n instructions and the query, drawn from FFL(``P_IGNORE``): (b, 2n + 1)."""
        write, read, ignore = self.verbs(self.SYMBOLS)
        p_write = (1 - self.P_IGNORE) / 2
        kind = torch.multinomial(torch.tensor([p_write, p_write, self.P_IGNORE]), b * n, replacement=True,
                                 generator=generator).view(b, n)  # 0 write, 1 read, 2 ignore
        kind[:, 0] = 0
        bits = torch.randint(2, (b, n), generator=generator)
        written = _last_written(kind, bits)  # (b, n): the bit of the last write at or before each instruction
        bits = torch.where(kind == 1, written, bits)
        verb = torch.tensor([write, read, ignore])[kind]
        return torch.cat([torch.stack([verb, bits], 2).flatten(1), torch.full((b, 1), read)], 1)

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        if count > self.capacity(cfg, n) - len(exclude):
            raise ValueError(f"flip_flop: cannot draw {count} distinct programs of {n} instructions")
        return distinct_rows(lambda b: self.programs(n, b, generator), count, 2 * n + 1, exclude)

    def question_answer(self, sources: torch.Tensor, symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, 2n + 1): n instructions then the query -> question (the same), answer (B, 1): the bit of the
        last write."""
        write, read, _ = self.verbs(symbols)
        verb, bits = sources[:, :-1:2], sources[:, 1:-1:2]  # (B, n) each
        kind = torch.where(verb == write, 0, torch.where(verb == read, 1, 2))
        return sources, _last_written(kind, bits)[:, -1:]

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """The strongest answer that reads no order: for each count of writes of 0, writes of 1, reads of 0 and reads
        of 1 (what a model that sees the instructions as a bag can count; ignores carry nothing), the bit most often
        right, fitted on 2,048 programs of the data's generator and scored on 2,048 others (fixed generators, so the
        same number every time; a bag the fit never saw answered by the majority), or the bit written more often
        where that scores higher (beyond N, where most bags are new to the fit)."""
        return _flip_flop_floor(self, n)


def _last_written(kind: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
    """kind, bits (B, n), kind 0 a write -> (B, n): the bit of the last write at or before each position (the first
    position is a write)."""
    position = torch.arange(kind.shape[1]).expand_as(kind)
    last = torch.where(kind == 0, position, -1).cummax(1).values.clamp(min=0)  # (B, n): the last write's index
    return bits.gather(1, last)


@functools.lru_cache(maxsize=None)
def _flip_flop_floor(problem: FlipFlop, n: int) -> float:
    write, read, _ = problem.verbs(problem.SYMBOLS)

    def bag(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(counts of w0, w1, r0, r1 (2048, 4), answer) per program."""
        rows = problem.programs(n, 2048, torch.Generator().manual_seed(seed))
        verb, bits = rows[:, :-1:2], rows[:, 1:-1:2]
        counts = torch.stack([((verb == v) & (bits == b)).sum(1) for v in (write, read) for b in (0, 1)], 1)
        return counts, problem.question_answer(rows, problem.SYMBOLS)[1][:, 0]

    (fit, answer), (scored, scored_answer) = bag(n), bag(n + 1_000_003)
    keys, index = torch.cat([fit, scored]).unique(dim=0, return_inverse=True)  # each bag seen, numbered
    table = torch.zeros(len(keys), 2, dtype=torch.long).index_put_((index[:len(fit)], answer),
                                                                   torch.ones_like(answer), accumulate=True)
    # the bit written more often (ties: read more often; then 0), which beyond N, where most bags are new to the fit,
    # is the better rule (a logistic fit on the counts scores the same: tests/test_length.py)
    w0, w1, r0, r1 = keys.T
    majority = torch.where(w1 != w0, (w1 > w0).long(), (r1 > r0).long())
    fitted = table.argmax(1).where(table.sum(1) > 0, majority)  # a bag the fit never saw: the majority
    scored_index = index[len(fit):]
    return max(float((rule[scored_index] == scored_answer).float().mean()) for rule in (fitted, majority))


PROBLEM = FlipFlop()
