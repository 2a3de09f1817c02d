"""**Variable tracking** (RULER, Hsieh et al. 2024, https://arxiv.org/abs/2404.06654, §3.2, multi-hop tracing;
NVIDIA/RULER ``scripts/data/synthetic/variable_tracking.py``): two chains of assignments, `X0 = v`, `X1 = X0`,
`X2 = X1`, every name and value distinct, each inserted in its own order at random places among n noise statements;
the question names one chain's value, and the answer is that chain's three variables in chain order. Length is the
noise, as RULER lengthens its rows: the chains are the same at every n, only further apart. Binding a name to the
statement it is in, and a statement to its chain, takes the order; counting does not. Its floor is not chance: a
bag of the row's tokens tells a chain's last variable (seen once, the others twice) from the rest, not the chain,
so the best order-free answer is right a quarter of the time in the first two slots and half in the last: 1/3.

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems.base import Problem, distinct_rows


class VariableTracking(Problem):
    """RULER's variable tracking (Hsieh et al. 2024, https://arxiv.org/abs/2404.06654, §3.2; its generator
    ``generate_chains`` and ``generate_input_output``): ``CHAINS`` chains of ``HOPS`` hops each (RULER: one chain of
    four hops in its standard set; here two of two, so that the value, not the presence of a name, decides the
    chain), a chain's statements kept in order at random places among the noise (RULER's ``sorted(random.sample(…))``
    insertion), and the query one chain's value. RULER asks for every variable holding the value, unordered; here
    the answer is the chain's variables in chain order, so that it has one right row.

    A statement is two tokens, its name and what is assigned (a value or a name); a noise statement is two ``NOISE``
    tokens (RULER's noise is one sentence repeated). A problem of length n: n noise statements and the chains'
    ``CHAINS`` × (``HOPS`` + 1), then the queried value: 2 (n + 6) + 1 tokens. Tokens: ``NAMES`` names (the answers),
    then ``VALUES`` values, then ``NOISE``."""

    name = "variable_tracking"
    draws_sources = True
    CHAINS: ClassVar[int] = 2
    HOPS: ClassVar[int] = 2
    NAMES: ClassVar[int] = 12
    VALUES: ClassVar[int] = 8

    @property
    def statements(self) -> int:
        """Chain statements a row holds, at every length."""
        return self.CHAINS * (self.HOPS + 1)

    @property
    def noise(self) -> int:
        return self.NAMES + self.VALUES

    def symbols(self, cfg: LengthDataConfig) -> int:
        return self.NAMES + self.VALUES + 1

    def alphabet(self, n_symbols: int) -> int:
        return self.NAMES

    def source_length(self, n: int) -> int:
        return 2 * (n + self.statements) + 1

    def answer_length(self, n: int) -> int:
        return self.HOPS + 1

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        """Distinct rows: the names and values of the chains, where their statements sit and which chain is asked."""
        names = math.perm(self.NAMES, self.statements)
        values = math.perm(self.VALUES, self.CHAINS)
        places = math.comb(n + self.statements, self.statements) * math.comb(self.statements, self.HOPS + 1)
        return names * values * places * self.CHAINS

    def programs(self, n: int, b: int, generator: torch.Generator) -> torch.Tensor:
        """b rows of length n: (b, 2 (n + 6) + 1), the statements then the queried value."""
        hops, slots = self.HOPS + 1, n + self.statements
        names = torch.rand(b, self.NAMES, generator=generator).argsort(1)[:, :self.statements]  # (b, 6) distinct
        values = self.NAMES + torch.rand(b, self.VALUES, generator=generator).argsort(1)[:, :self.CHAINS]
        rows = torch.full((b, slots, 2), self.noise, dtype=torch.long)
        place = torch.rand(b, slots, generator=generator).argsort(1)  # (b, slots): a random slot per statement
        for c in range(self.CHAINS):
            chain = names[:, c * hops:(c + 1) * hops]  # (b, hops): X0, X1, X2
            where = place[:, n + c * hops:n + (c + 1) * hops].sort(1).values  # its slots, in chain order
            assigned = torch.cat([values[:, c:c + 1], chain[:, :-1]], 1)  # X0 = v, X1 = X0, X2 = X1
            rows.scatter_(1, where[:, :, None].expand(b, hops, 2), torch.stack([chain, assigned], 2))
        asked = torch.randint(self.CHAINS, (b, 1), generator=generator)
        return torch.cat([rows.flatten(1), values.gather(1, asked)], 1)

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        if count > self.capacity(cfg, n) - len(exclude):
            raise ValueError(f"variable_tracking: cannot draw {count} distinct rows of {n} noise statements")
        return distinct_rows(lambda b: self.programs(n, b, generator), count, self.source_length(n), exclude)

    def question_answer(self, sources: torch.Tensor, symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, 2S + 1): S statements then the queried value -> question (the same), answer (B, HOPS + 1):
        the names the value reaches, hop by hop (the one statement whose right side is the value, then the one whose
        right side is that statement's name, …)."""
        statements = sources[:, :-1].view(len(sources), -1, 2)  # (B, S, 2): name, what is assigned
        current, answer = sources[:, -1], []
        for _ in range(self.HOPS + 1):
            at = (statements[:, :, 1] == current[:, None]).float().argmax(1)  # (B,) the one statement that matches
            current = statements[torch.arange(len(sources)), at, 0]
            answer.append(current)
        return sources, torch.stack(answer, 1)

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """The strongest answer that reads no order, at every n: the row as a bag shows each name's count (a chain's
        last name once, the others twice: each is assigned, and assigned on) and both values, not which name goes
        with which value, so every chain and every order of a chain's first two names fit it alike. Its best
        answer is a name seen twice in each of the first two slots (right 1 / (2 · CHAINS) of the time) and a name
        seen once in the last (1 / CHAINS): 1/3 at two chains (a fitted bag table finds no more:
        tests/test_length.py)."""
        first = 1 / (self.HOPS * self.CHAINS)  # the chains' first HOPS names are alike to a bag
        return (self.HOPS * first + 1 / self.CHAINS) / (self.HOPS + 1)


PROBLEM = VariableTracking()
