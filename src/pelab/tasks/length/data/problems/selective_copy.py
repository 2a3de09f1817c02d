"""**Selective copy** (Gu & Dao 2023, Mamba, https://arxiv.org/abs/2312.00752; one of CoPE's tasks): n data
symbols among n noise tokens, in 2n slots, and the answer is the data symbols in order. Where the j-th answer symbol
sits depends on how many data symbols come before it, the count CoPE's gates make; beyond N a row holds more of
both. Its floor is not chance: every answer symbol the row's commonest data symbol, which reads no order.

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import math

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems.base import Problem, commonest_share, distinct_rows


class SelectiveCopy(Problem):
    """Selective copy (Gu & Dao 2023, Mamba, https://arxiv.org/abs/2312.00752, §3.1; one of CoPE's tasks, Golovneva
    et al. 2024, https://arxiv.org/abs/2405.18719, §5.2): n data symbols scattered among n noise tokens, in 2n
    slots; the answer is the data symbols in order. Where the j-th answer symbol sits depends on how many data
    symbols come before it, not on its position: the count CoPE's gates make. The noise token is one symbol after
    the data alphabet; every arrangement of the slots is equally likely."""

    name = "selective_copy"
    draws_sources = True

    def symbols(self, cfg: LengthDataConfig) -> int:
        return cfg.n_symbols + 1  # the data symbols, then the noise token

    def source_length(self, n: int) -> int:
        return 2 * n

    def answer_length(self, n: int) -> int:
        return n

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """The strongest answer that reads no order: every answer symbol the row's commonest data symbol (the data
        symbols as a bag; their order is the answer), right on c_max/n of them (``commonest_share``, exact)."""
        return commonest_share(cfg.n_symbols, n)

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        return math.comb(2 * n, n) * cfg.n_symbols**n

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        if count > self.capacity(cfg, n) - len(exclude):
            raise ValueError(f"selective_copy: cannot draw {count} distinct rows of {n} data symbols")

        def candidates(b: int) -> torch.Tensor:
            data = torch.randint(cfg.n_symbols, (b, 2 * n), generator=generator)
            noise = torch.rand(b, 2 * n, generator=generator).argsort(1)[:, :n]  # the noise slots
            return data.scatter(1, noise, cfg.n_symbols)

        return distinct_rows(candidates, count, 2 * n, exclude)

    def question_answer(self, sources: torch.Tensor, symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, 2n) -> question (the same), answer (B, n): the data symbols (below the noise token, symbols −
        1) in order."""
        keep = sources < symbols - 1
        order = torch.sort((~keep).int(), dim=1, stable=True).indices[:, : sources.shape[1] // 2]
        return sources, sources.gather(1, order)


PROBLEM = SelectiveCopy()
