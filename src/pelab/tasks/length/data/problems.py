"""The problems of the length study: a source string -> (question, answer), both token rows.

A problem of *length n* has an input of n symbols (binary addition: two n-bit numbers). Vocabulary: the
symbols 0..k-1, then ``SEP`` (ends the question), ``BLANK`` (an answer slot of the encoder layout) and ``PLUS``
(binary addition). Ruoss et al. 2023 (https://arxiv.org/abs/2305.16843), Table 4: reverse string, duplicate
string, binary addition; and multi-query associative recall (``Recall``: Arora et al. 2024, Zoology,
https://arxiv.org/abs/2312.04927), whose length is its number of key-value pairs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import ClassVar

import torch

from pelab.tasks.length.config import LengthDataConfig
from pelab.tasks.length.data.layout import decoder_rows, encoder_rows
from pelab.tasks.length.data.tokens import IGNORE, special_tokens, vocab_size


class Problem:
    """One problem of the length study. Adding a problem is one subclass here, listed in ``PROBLEMS``: the
    registry then has its two tasks (``<name>``, bidirectional, and ``<name>_causal``), as a task of DeepMind's
    randomized positional encodings is one class (github.com/google-deepmind/randomized_positional_encodings,
    ``tasks/``)."""

    name: ClassVar[str]
    binary: ClassVar[bool] = False  # the alphabet is {0, 1} whatever data.n_symbols says
    draws_sources: ClassVar[bool] = False  # sources from ``draw``, not uniform strings over the alphabet
    # the decoder's answers sit between the queries (``q1 a1 q2 a2 …``: recall), not after the question
    interleaved: ClassVar[bool] = False

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

    def keys(self, cfg: LengthDataConfig) -> int:
        return max(cfg.n_symbols, cfg.test_max)

    def alphabet(self, n_symbols: int) -> int:
        raise TypeError("recall's alphabet depends on data.test_max: use answer_alphabet(cfg)")

    def answer_alphabet(self, cfg: LengthDataConfig) -> int:
        return self.keys(cfg)

    def in_context_floor(self, cfg: LengthDataConfig, n: int) -> float:
        """Answering each query with a value drawn from the row's n value slots is right with probability
        (1 + (n - 1)/K) / n: its own pair's slot, and each of the other n - 1 holding the same of K values with
        probability 1/K (values are drawn with replacement). At the quick sizes 0.360 within N and 0.085 beyond,
        against chance 1/K = 0.031: a model that only learned to copy some value of the context scores this."""
        return (1 + (n - 1) / self.keys(cfg)) / n

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
        """The better of two answers that read no order: the commonest count at n, and the query's increments counted
        over the whole program (resets ignored, at most the cap): what a model that sees the statements as a bag
        can answer (a NoPE encoder sees no more). Estimated on 4,096 rows drawn as the data are (a fixed generator,
        so the same number every time; its standard error is at most 0.008)."""
        return _count_floor(self, cfg.train_max, n)


_COUNT_STATES: dict[tuple[int, int], list[dict[tuple[int, ...], int]]] = {}  # Counting.capacity's, per cap


@functools.lru_cache(maxsize=None)
def _count_floor(problem: Counting, train_max: int, n: int) -> float:
    cfg = LengthDataConfig(train_max=train_max, test_max=max(train_max, n))
    symbols = problem.symbols(cfg)
    rows = problem.programs(cfg, n, 4096, torch.Generator().manual_seed(n))
    answer = problem.question_answer(rows, symbols)[1][:, 0]
    subject, verb = rows[:, :-1:2], rows[:, 1:-1:2]
    bag = ((subject == rows[:, -1:]) & (verb == problem.verbs(symbols)[1])).sum(1).clamp(max=problem.cap(cfg))
    commonest = answer.bincount().max().item() / len(answer)
    return max(commonest, (problem.VARIABLES + bag == answer).float().mean().item())


PROBLEMS: dict[str, Problem] = {problem.name: problem for problem in (
    Reverse(), Duplicate(), Addition(), Recall(), SelectiveCopy(), IndirectIndexing(), Counting())}
