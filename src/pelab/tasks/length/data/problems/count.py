"""**Counting** (Golovneva et al. 2024, CoPE, https://arxiv.org/abs/2405.18719, from its reference generator): a
program of n statements over three variables, each `x = 0`, `x ++` or `pass`, then `print x`; the answer is the
number of `x ++` since x's last reset (at most a cap: CoPE's 10, or ⌊N/2⌋ where the training lengths do not reach
it; a statement past it is drawn again). Which increments count depends on where the last reset sits, so the order
of statements matters, not their number. Its floor is not chance: for each number of resets and increments of the
query's variable, the count most often right, which needs no order (fitted on 2,048 programs and scored on 2,048
others; high within N, where few programs reset their variable). Beyond N a program holds more resets and more of
the other variables' statements.

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import functools
from typing import ClassVar

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems.base import Problem, distinct_rows


class Counting(Problem):
    """Counting (Golovneva et al. 2024, CoPE, https://arxiv.org/abs/2405.18719, §5.1; the generator
    ``projects/cope/scripts/count_data_gen.py`` of github.com/facebookresearch/RAM): a program of n statements over
    ``VARIABLES`` variables, each ``x = 0`` (set), ``x ++`` (increment) or ``pass``, then ``print x``; the answer is
    the number of ``x ++`` since x's last ``x = 0``. Which ``++`` count depends on where the last reset sits: the
    order of statements, not their number, which is what CoPE's gates count.

    As the reference generator: each statement draws its kind by ``WEIGHTS``, a set any variable, an increment one of
    the variables set so far, and a statement that cannot be made (an increment with none set, or past the cap) is
    drawn again; the query is one of the variables set, rows with none are drawn again. The cap is CoPE's 10 where the
    training lengths reach it, else ⌊N/2⌋ (``cap``), so every answer occurs within the training lengths. Unlike the
    reference: a statement is two tokens (``x =0``, ``x ++``, ``pass pass``), so a program of n statements is 2n + 1
    tokens with its query, and the weights are 1 : 2 : 1, not 1 : 50 : 7 (over CoPE's 3–512 statements that mix
    resets counts often; over 1..N statements it would leave most counts at 0, and with fewer resets a count that
    ignores order is right: the floor, ``in_context_floor``). Tokens: the variables, the counts 0..cap (the
    answers), then set, increment and pass."""

    name = "count"
    draws_sources = True
    VARIABLES: ClassVar[int] = 3  # CoPE's Table 3 middle column (1, 3 and 5 variables)
    WEIGHTS: ClassVar[tuple[float, float, float]] = (1.0, 2.0, 1.0)  # set, increment, pass
    MAX_COUNT: ClassVar[int] = 10  # the reference's MAX_VAL

    def cap(self, cfg: LengthDataConfig) -> int:
        return min(self.MAX_COUNT, max(1, cfg.train_max // 2))

    def alphabet(self, n_symbols: int) -> int:
        raise TypeError("count's alphabet depends on data.train_max: use answer_alphabet(cfg)")

    def answer_alphabet(self, cfg: LengthDataConfig) -> int:
        return self.cap(cfg) + 1

    def symbols(self, cfg: LengthDataConfig) -> int:
        return self.VARIABLES + self.cap(cfg) + 1 + 3  # variables, counts 0..cap, set, increment, pass

    def source_length(self, n: int) -> int:
        return 2 * n + 1

    def answer_length(self, n: int) -> int:
        return 1

    @staticmethod
    def verbs(symbols: int) -> tuple[int, int, int]:
        """The set, increment and pass tokens: the last three of ``symbols``."""
        return symbols - 3, symbols - 2, symbols - 1

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        """Distinct (program, query) rows of n statements, counted exactly over the variables' states (unset or a
        count 0..cap): a set reaches any state's variable at 0, an increment a set variable below the cap."""
        cap, unset = self.cap(cfg), -1
        # programs of 0, 1, … statements by the variables' states, kept per cap: preparing the full profile asks every
        # n to 80, each three times
        by_length = _COUNT_STATES.setdefault((self.VARIABLES, cap), [{(unset,) * self.VARIABLES: 1}])
        while len(by_length) <= n:
            after: dict[tuple[int, ...], int] = {}
            for state, count in by_length[-1].items():
                nexts = [state]  # pass
                nexts += [state[:v] + (0,) + state[v + 1:] for v in range(self.VARIABLES)]
                nexts += [state[:v] + (c + 1,) + state[v + 1:] for v, c in enumerate(state) if unset < c < cap]
                for state_ in nexts:
                    after[state_] = after.get(state_, 0) + count
            by_length.append(after)
        return sum(count * sum(c != unset for c in state) for state, count in by_length[n].items())

    def programs(self, cfg: LengthDataConfig, n: int, b: int, generator: torch.Generator) -> torch.Tensor:
        """b rows (≤ b: rows that set no variable are dropped) of n statements and a query, drawn as the reference
        draws them: (rows, 2n + 1)."""
        cap, v_count = self.cap(cfg), self.VARIABLES
        set_, inc, pass_ = self.verbs(self.symbols(cfg))
        counts = torch.full((b, v_count), -1)  # -1: not set
        statements = torch.empty(b, n, 2, dtype=torch.long)
        weights = torch.tensor(self.WEIGHTS, dtype=torch.float)
        rows = torch.arange(b)
        for i in range(n):
            todo = torch.ones(b, dtype=torch.bool)
            while bool(todo.any()):
                kind = torch.multinomial(weights, b, replacement=True, generator=generator)  # 0 set, 1 inc, 2 pass
                anyvar = torch.randint(v_count, (b,), generator=generator)
                # an increment: one of the variables set so far, uniformly (argmax of noise over them)
                noise = torch.rand(b, v_count, generator=generator).masked_fill(counts < 0, -1.0)
                setvar = noise.argmax(1)
                ok = (kind != 1) | ((counts[rows, setvar] >= 0) & (counts[rows, setvar] < cap))
                take = todo & ok
                var = torch.where(kind == 0, anyvar, setvar)
                statements[take, i, 0] = torch.where(kind == 2, pass_, var)[take]
                statements[take, i, 1] = torch.tensor([set_, inc, pass_])[kind][take]
                sets, incs = take & (kind == 0), take & (kind == 1)
                counts[sets, var[sets]] = 0
                counts[incs, var[incs]] += 1
                todo &= ~ok
        noise = torch.rand(b, v_count, generator=generator).masked_fill(counts < 0, -1.0)
        query = noise.argmax(1, keepdim=True)
        valid = (counts >= 0).any(1)
        return torch.cat([statements.flatten(1), query], 1)[valid]

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        if count > self.capacity(cfg, n) - len(exclude):
            raise ValueError(f"count: cannot draw {count} distinct programs of {n} statements")
        return distinct_rows(lambda b: self.programs(cfg, n, b, generator), count, 2 * n + 1, exclude)

    def question_answer(self, sources: torch.Tensor, symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, 2n + 1): n statements then the query -> question (the same), answer (B, 1): the count token
        (``VARIABLES`` + the count)."""
        v_count = self.VARIABLES
        set_, inc, _ = self.verbs(symbols)
        subject, verb = sources[:, :-1:2], sources[:, 1:-1:2]  # (B, n) each
        mine = subject == sources[:, -1:]
        position = torch.arange(subject.shape[1]).expand_as(subject)
        last_set = torch.where(mine & (verb == set_), position, -1).max(1, keepdim=True).values
        count = (mine & (verb == inc) & (position > last_set)).sum(1, keepdim=True)
        return sources, v_count + count

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """The strongest answer that reads no order: for each number of resets and increments of the query's variable
        (what a model that sees the statements as a bag can count; a NoPE encoder sees no more), the count most often
        right, fitted on 2,048 programs of the data's generator and scored on 2,048 others (fixed generators, so the
        same number every time; its standard error is at most 0.011). The programs are not made distinct as the
        data's rows are, so at the smallest n, where the rows cover most programs, the mix differs a little. It
        covers the commonest count and the increments counted with resets ignored, each one such table."""
        return _count_floor(self, cfg.train_max, n)


_COUNT_STATES: dict[tuple[int, int], list[dict[tuple[int, ...], int]]] = {}  # Counting.capacity's, per cap


@functools.lru_cache(maxsize=None)
def _count_floor(problem: Counting, train_max: int, n: int) -> float:
    cfg = LengthDataConfig(train_max=train_max, test_max=max(train_max, n))
    symbols, answers = problem.symbols(cfg), problem.cap(cfg) + 1
    set_, inc, _ = problem.verbs(symbols)

    def bag(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(key, answer) per program: key = resets · (n + 1) + increments of the query's variable."""
        rows = problem.programs(cfg, n, 2048, torch.Generator().manual_seed(seed))
        mine = rows[:, :-1:2] == rows[:, -1:]
        verb = rows[:, 1:-1:2]
        key = (mine & (verb == set_)).sum(1) * (n + 1) + (mine & (verb == inc)).sum(1)
        return key, problem.question_answer(rows, symbols)[1][:, 0] - problem.VARIABLES

    key, answer = bag(n)
    table = torch.bincount(key * answers + answer, minlength=(n + 1) ** 2 * answers).view(-1, answers)
    best = table.argmax(1).where(table.sum(1) > 0, answer.bincount(minlength=answers).argmax())  # unseen: commonest
    key, answer = bag(n + 1_000_003)
    return float((best[key] == answer).float().mean())


PROBLEM = Counting()
