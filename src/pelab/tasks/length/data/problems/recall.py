"""**Associative recall** (multi-query associative recall, MQAR; Arora et al. 2024, Zoology,
https://arxiv.org/abs/2312.04927), the study's retrieval task: a row holds n key–value pairs, then every key once as
a query, in random order; the answer to a query is the value that followed its key (K keys and K values, chance
1/K). Its floor is not chance: answering every query with the row's commonest value, which reads no order (the
values as a bag), is right on that value's share of the row's n values, so a model that has learned only to copy
the values of its context sits there. Its length n is its number of pairs, so beyond N a row holds more pairs
(distractors) as well as longer distances. The rows
`<scheme>+spread` are the same runs on the other way of going long: N pairs spread over the context of n pairs, the
other slots holding value tokens that no query matches (n = N+1..M; within N the rows are the plain ones). No
training row has value tokens where a key would stand, so a `+spread` row measures that novel pattern as well as
distance. The encoder reads each value at a blank after its query; the decoder writes each value after its query,
reading its own earlier answers.

The module's docstring is the problem's statement, as the report prints it (``Problem.statement``); a
problem of the length study, found by its ``PROBLEM`` (``problems/__init__.py``)."""

from __future__ import annotations

import math

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.problems.base import Problem, commonest_share, distinct_rows
from pelab.tasks.length.data.tokens import IGNORE, special_tokens


class Recall(Problem):
    """Multi-query associative recall (MQAR; Arora et al. 2024, https://arxiv.org/abs/2312.04927, Section 3.1 and
    ``HazyResearch/zoology``, ``data/associative_recall.py``): n key-value pairs, then every key once as a query, in
    random order; the answer to a query is the value that followed its key.

    Keys are drawn without replacement from K = max(data.n_symbols, data.test_max) key tokens (so every evaluated
    n fits), values with replacement from K value tokens (chance 1/K). A row's source is its context (2c tokens:
    ``k v k v …``; where ``draw_spread`` spreads the pairs out, the other slots hold two random value tokens each,
    tokens seen in training that no query can match) then its m queries: width 2c + m. Layouts (``rows``): the
    encoder reads each value at a blank right after its query (``… SEP q1 _ q2 _ …``); the decoder predicts each
    value at its query (``… SEP q1 a1 q2 a2 …``; at evaluation from its own earlier answers).
    Unlike Zoology's MQAR: values may repeat within a row, the queries follow the pairs contiguously (Zoology spaces
    them with noise tokens) and the decoder reads the true value after each query in training (its own at
    evaluation).
    """

    name = "recall"
    draws_sources = True
    interleaved = True
    retrieval = True

    def keys(self, cfg: LengthDataConfig) -> int:
        return max(cfg.n_symbols, cfg.test_max)

    def alphabet(self, n_symbols: int) -> int:
        raise TypeError("recall's alphabet depends on data.test_max: use answer_alphabet(cfg)")

    def answer_alphabet(self, cfg: LengthDataConfig) -> int:
        return self.keys(cfg)

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """The strongest answer that reads no order: every query answered with the row's commonest value (which key a
        value followed is order; the values as a bag are not), right on c_max/n of the queries, c_max the commonest
        of n values drawn with replacement from K (``commonest_share``, exact). It beats answering with any value of
        the context, (1 + (n − 1)/K)/n, and chance 1/K."""
        return commonest_share(self.keys(cfg), n)

    def symbols(self, cfg: LengthDataConfig) -> int:
        return 2 * self.keys(cfg)  # keys 0..K-1, values K..2K-1

    def source_length(self, n: int) -> int:
        return 3 * n

    def answer_length(self, n: int) -> int:
        return n

    def capacity(self, cfg: LengthDataConfig, n: int) -> int:
        k = self.keys(cfg)  # ordered distinct keys, their values, the order of the queries
        return math.perm(k, n) * k**n * math.factorial(n)

    def draw(self, cfg: LengthDataConfig, n: int, count: int, generator: torch.Generator,
             exclude: set[tuple[int, ...]] = frozenset()) -> torch.Tensor:
        return self._draw(cfg, n, n, count, generator, exclude)

    def extra_splits(self, cfg: LengthDataConfig, generator: torch.Generator) -> dict[str, dict[int, torch.Tensor]]:
        """``spread``: at n = N+1..M, N pairs over the context of n pairs (``draw_spread``)."""
        return {"spread": {n: self.draw_spread(cfg, cfg.train_max, n, cfg.n_test, generator)
                           for n in range(cfg.train_max + 1, cfg.test_max + 1)}}

    def draw_spread(self, cfg: LengthDataConfig, pairs: int, n: int, count: int,
                    generator: torch.Generator) -> torch.Tensor:
        """``count`` rows of ``pairs`` pairs spread over the 2n-token context of length n (the other n - pairs
        slots two random value tokens each), then their queries: the same pairs, further apart."""
        return self._draw(cfg, pairs, n, count, generator, frozenset())

    def _draw(self, cfg: LengthDataConfig, pairs: int, slots: int, count: int, generator: torch.Generator,
              exclude: set[tuple[int, ...]]) -> torch.Tensor:
        k = self.keys(cfg)
        if count > self.capacity(cfg, pairs) - len(exclude):
            raise ValueError(f"recall: cannot draw {count} distinct rows of {pairs} pairs")

        def candidates(b: int) -> torch.Tensor:
            keys = torch.rand(b, k, generator=generator).argsort(1)[:, :pairs]  # (b, pairs) distinct
            values = torch.randint(k, 2 * k, (b, pairs), generator=generator)
            queries = keys.gather(1, torch.rand(b, pairs, generator=generator).argsort(1))
            where = torch.rand(b, slots, generator=generator).argsort(1)[:, :pairs].sort(1).values  # pair slots
            context = torch.randint(k, 2 * k, (b, slots, 2), generator=generator)  # filler: values, no key
            context.scatter_(1, where[..., None].expand(b, pairs, 2), torch.stack([keys, values], 2))
            return torch.cat([context.flatten(1), queries], 1)

        return distinct_rows(candidates, count, 2 * slots + pairs, exclude)

    def question_answer(self, sources: torch.Tensor, symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, 2c + m): context then queries -> question (the same), answer (B, m): each query's value.
        m, the number of pairs, is half the row's key tokens (every key once in the context, once as a query);
        ``symbols``: 2K (``symbols``), the keys being 0..K-1."""
        keys = (sources < symbols // 2).sum(1)  # (B,): 2m in every row
        if not bool((keys == keys[0]).all()):
            raise ValueError("recall: every row of a batch needs the same number of pairs")
        m = int(keys[0]) // 2
        context, queries = sources[:, :-m], sources[:, -m:]
        match = context[:, 0::2].unsqueeze(1) == queries.unsqueeze(2)  # (B, m, c): each query's key slot
        return sources, context[:, 1::2].gather(1, match.int().argmax(-1))

    def hidden(self, tokens: torch.Tensor, symbols: int) -> torch.Tensor:
        """tokens (B, T) of ``rows`` -> (B, T) bool: True at both tokens of each context slot whose first token is a
        value, not a key (a spread row's filler, ``draw_spread``); the pairs, the separator and the queries are
        False, and a plain row (every slot a pair) hides nothing. Keys are 0..K − 1 (K = symbols // 2)."""
        sep = special_tokens(symbols)["sep"]
        width = int((tokens[0] == sep).nonzero()[0])  # the context's 2c tokens come before the first SEP
        filler = tokens[:, 0:width:2] >= symbols // 2  # (B, c): a slot opened by a value
        out = torch.zeros_like(tokens, dtype=torch.bool)
        out[:, :width] = filler.repeat_interleave(2, dim=1)
        return out

    def rows(self, question: torch.Tensor, answer: torch.Tensor, symbols: int,
             causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """question (B, 2c + m), answer (B, m) -> (tokens, targets):
        encoder ``context SEP q1 BLANK … qm BLANK`` (B, 2c + 1 + 2m), values read at the blanks;
        decoder ``context SEP q1 a1 … qm`` (B, 2c + 2m), value j predicted at query j."""
        tokens = special_tokens(symbols)
        b, m = answer.shape
        context, queries = question[:, :-m], question[:, -m:]
        slots = answer if causal else torch.full_like(answer, tokens["blank"])
        tail = torch.stack([queries, slots], 2).flatten(1)  # q1 a1 q2 a2 …  or  q1 _ q2 _ …
        read = torch.stack([answer, torch.full_like(answer, IGNORE)], 2).flatten(1)  # targets at the queries
        if not causal:
            read = torch.stack([torch.full_like(answer, IGNORE), answer], 2).flatten(1)  # at the blanks
        sep = torch.full((b, 1), tokens["sep"], dtype=torch.long)
        ignore = torch.full((b, context.shape[1] + 1), IGNORE, dtype=torch.long)
        tokens_, targets = torch.cat([context, sep, tail], 1), torch.cat([ignore, read], 1)
        if causal:  # the last answer is never an input
            tokens_, targets = tokens_[:, :-1], targets[:, :-1]
        return tokens_, targets


PROBLEM = Recall()
