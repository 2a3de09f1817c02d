"""Key tokens: the scored targets whose prediction needs the context beyond L, chosen once per test corpus by one
fixed evaluator, so that every scheme and seed is scored on the same tokens.

LongPPL (Fang et al., ICLR 2025, https://arxiv.org/abs/2410.23771, §3; PKU-ML/LongPPL, ``find_key_token``): a
target x_i is key where the evaluator's log-probability of it with the long context l_i beats the one with a short
context s_i by more than α (the long-short difference) and the long one is above β (the long-context likelihood):

    LSD(x_i) = log p(x_i | l_i) − log p(x_i | s_i) > α = 2,    LCL(x_i) = log p(x_i | l_i) > β = −2;

a scheme's key-token perplexity is exp of its mean NLL over the key tokens (LongPPL).

**The evaluator.** LongPPL's is a large pretrained LM whose key tokens are saved once and reused for every model
scored (its offline mode). pelab downloads nothing, and an evaluator that is one of the compared schemes would pick
the tokens that scheme reads best; so its evaluator reads no positions at all: a copy model over the context
itself (the ∞-gram of Liu et al. 2024, https://arxiv.org/abs/2401.17377, §2, with the context as its corpus) mixed
with a bigram of the training text,

    p(x | c) = λ_k · p_copy(x | c) + (1 − λ_k) · p_bigram(x | the last token of c),

where k is the length of c's longest suffix that occurs earlier in c with a token after it, p_copy the share of
those occurrences that x follows, λ_k one weight per k (1 .. ``K_MAX``, longer matches pooled) fitted by EM to the
validation text, and the bigram smoothed towards the training unigram (add-one), its prior weight fitted to the
validation text from ``PRIORS``. The long context is the longest evaluation length T_max before the target (the most
any scheme reads), the short one the L before it. A key token is one that the text more than L back makes
predictable by repetition: a name, a phrase, a figure said again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

ALPHA, BETA = 2.0, -2.0  # LongPPL's thresholds (its paper's and its code's defaults)
K_MAX = 8  # suffix lengths with a weight of their own; longer matches share the last
K_SEARCH = 64  # the longest suffix looked for (a longer repeat is read as this long)
PRIORS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)  # the bigram's prior weights tried on the validation text
EM_STEPS = 100


class Bigram:
    """p(b | a) = (c(a, b) + μ·u(b)) / (c(a) + μ), u(b) = (c(b) + 1) / (n + V): counts of the training stream, μ
    the prior weight."""

    def __init__(self, stream: np.ndarray, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.unigram = (np.bincount(stream, minlength=vocab_size) + 1.0) / (len(stream) + vocab_size)
        self.first = np.bincount(stream[:-1], minlength=vocab_size).astype(float)
        self.pairs, self.pair_counts = np.unique(stream[:-1] * vocab_size + stream[1:], return_counts=True)

    def prob(self, prev: np.ndarray, nxt: np.ndarray, prior: float) -> np.ndarray:
        """(n,) p(nxt | prev), elementwise."""
        codes = prev * self.vocab_size + nxt
        at = np.clip(np.searchsorted(self.pairs, codes), 0, len(self.pairs) - 1)
        counts = np.where(self.pairs[at] == codes, self.pair_counts[at], 0)
        return (counts + prior * self.unigram[nxt]) / (self.first[prev] + prior)


@dataclass(frozen=True)
class Matches:
    """Per target (n,): the longest repeated suffix (k) and p_copy of the target, with the long and short contexts."""

    k_long: np.ndarray
    copy_long: np.ndarray
    k_short: np.ndarray
    copy_short: np.ndarray


def matches(tokens: np.ndarray, targets: np.ndarray, long: int, short: int, block: int = 2048) -> Matches:
    """For each target index i of ``tokens`` (1-D), with the context tokens[i − w : i] for w in (long, short): the
    length k of the context's longest suffix that also ends earlier in the context with a token after it (that
    token inside the context too), and the share of those earlier ends followed by tokens[i] (0 where k = 0).

    By lag: an occurrence ending δ tokens before the suffix's end (at i − 1 − δ, its next token tokens[i − δ]) is as
    long as the run of agreements tokens[p] == tokens[p − δ] ending at p = i − 1, cut where it would start before
    the context (at most w − δ tokens); every lag 1 .. w − 1 at once, ``block`` targets at a time."""
    out = {name: np.zeros(len(targets)) for name in ("k_long", "copy_long", "k_short", "copy_short")}
    lags = np.arange(1, long)[:, None]  # (long − 1, 1) δ
    for lo in range(0, len(targets), block):
        mine = targets[lo:lo + block]
        # tokens[start:upto] hold every context of the block; a run cut at start is longer than any context allows
        start, upto = max(0, int(mine.min()) - long), int(mine.max())
        window = tokens[start:upto]
        runs = np.empty((len(lags), len(mine)), dtype=np.int64)  # (lags, targets) agreements ending at i − 1
        positions = np.arange(len(window))
        for row, lag in enumerate(lags[:, 0]):
            agree = np.zeros(len(window), dtype=bool)
            agree[lag:] = window[lag:] == window[:len(window) - lag]
            runs[row] = (positions - np.maximum.accumulate(np.where(agree, -1, positions)))[mine - 1 - start]
        nxt = tokens[np.maximum(mine[None, :] - lags, 0)]  # (lags, targets) the token after each occurrence
        hit = nxt == tokens[mine][None, :]
        for name, width in (("long", long), ("short", short)):
            length = np.minimum(np.minimum(runs, np.maximum(width - lags, 0)), K_SEARCH)  # (lags, targets)
            length[width - 1:] = 0  # lags beyond the context
            k = length.max(axis=0)
            longest = (length == k[None, :]) & (k[None, :] > 0)
            found = longest.sum(axis=0)
            out[f"k_{name}"][lo:lo + block] = k
            out[f"copy_{name}"][lo:lo + block] = np.divide((longest & hit).sum(axis=0), found,
                                                             out=np.zeros(len(mine)), where=found > 0)
    return Matches(**{name: v.astype(int) if name.startswith("k_") else v for name, v in out.items()})


def _matches_by_search(tokens: np.ndarray, targets: np.ndarray, long: int, short: int) -> Matches:
    """``matches`` written as the definition reads, target by target (the test's reference)."""
    out = {name: np.zeros(len(targets)) for name in ("k_long", "copy_long", "k_short", "copy_short")}
    for n, i in enumerate(int(t) for t in targets):
        for name, width in (("long", long), ("short", short)):
            context = tokens[i - width:i]
            best, followers = 0, []
            for end in range(len(context) - 1):  # an earlier end with its next token in the context
                k = 0
                while k < min(end + 1, K_SEARCH) and context[end - k] == context[len(context) - 1 - k]:
                    k += 1
                if k > best:
                    best, followers = k, [context[end + 1]]
                elif k == best and k:
                    followers.append(context[end + 1])
            out[f"k_{name}"][n] = best
            out[f"copy_{name}"][n] = float(np.mean(np.array(followers) == tokens[i])) if best else 0.0
    return Matches(**{name: v.astype(int) if name.startswith("k_") else v for name, v in out.items()})


def bucket(k: np.ndarray) -> np.ndarray:
    return np.minimum(k, K_MAX)


def fit_weights(k: np.ndarray, copy: np.ndarray, background: np.ndarray) -> np.ndarray:
    """(K_MAX + 1,) λ by suffix length (λ_0 = 0: no match, the bigram alone), each the maximum-likelihood weight of
    the two-component mixture over the targets of its length (EM; 0.5 where none)."""
    weights = np.full(K_MAX + 1, 0.5)
    weights[0] = 0.0
    b = bucket(k)
    for _ in range(EM_STEPS):
        lam = weights[b]
        mixed = lam * copy + (1 - lam) * background
        share = np.divide(lam * copy, mixed, out=np.zeros_like(mixed), where=mixed > 0)
        for length in range(1, K_MAX + 1):
            mine = b == length
            if mine.any():  # below 1: the bigram keeps a share, so no target has probability 0
                weights[length] = min(float(share[mine].mean()), 1 - 1e-3)
    return weights


@dataclass(frozen=True)
class Evaluator:
    """The fitted evaluator: the bigram, its prior weight and the weights λ_k."""

    bigram: Bigram
    prior: float
    weights: np.ndarray

    def log_probs(self, tokens: np.ndarray, targets: np.ndarray, long: int, short: int) -> tuple[np.ndarray, ...]:
        """(log p with the long context, log p with the short) of each target, (n,) each."""
        m = matches(tokens, targets, long, short)
        background = self.bigram.prob(tokens[targets - 1], tokens[targets], self.prior)
        return tuple(np.log(self.weights[bucket(k)] * copy + (1 - self.weights[bucket(k)]) * background)
                     for k, copy in ((m.k_long, m.copy_long), (m.k_short, m.copy_short)))


def fit_evaluator(train: torch.Tensor, val: torch.Tensor, vocab_size: int, long: int, short: int,
                  n_targets: int) -> Evaluator:
    """The bigram's prior and the weights λ_k, fitted to the first ``n_targets`` targets of the validation stream
    that have ``long`` tokens before them (the weights with the long context, the one the test reads)."""
    stream, held = train.numpy(), val.numpy()
    targets = np.arange(long, min(len(held), long + n_targets))
    bigram = Bigram(stream, vocab_size)
    nll = {prior: -np.log(bigram.prob(held[targets - 1], held[targets], prior)).mean() for prior in PRIORS}
    prior = min(nll, key=nll.get)
    m = matches(held, targets, long, short)
    weights = fit_weights(m.k_long, m.copy_long, bigram.prob(held[targets - 1], held[targets], prior))
    return Evaluator(bigram, prior, weights)


def is_key(long: np.ndarray, short: np.ndarray, alpha: float = ALPHA, beta: float = BETA) -> np.ndarray:
    """LongPPL's rule on log-probabilities: long − short > α and long > β (``find_key_token``: loss_short − loss_full
    > α and loss_full < −β)."""
    return (long - short > alpha) & (long > beta)


@dataclass(frozen=True)
class KeyTokens:
    """Per test speech a (N,) bool mask over its scored targets (tokens N+1 .. 2N, ``evaluate.windows``), and the
    evaluator's fitted weights λ_k."""

    masks: list[torch.Tensor]
    weights: np.ndarray

    @property
    def count(self) -> int:
        return int(sum(int(m.sum()) for m in self.masks))

    @property
    def share(self) -> float:
        return self.count / max(1, sum(len(m) for m in self.masks))


def key_tokens(train: torch.Tensor, val: torch.Tensor, test: list[torch.Tensor], vocab_size: int, context: int,
               longest: int) -> KeyTokens:
    """The key tokens of the test speeches (each 2N + 1 tokens, the last N scored): the long context ``longest``
    tokens, the short ``context`` (L)."""
    n = (len(test[0]) - 1) // 2
    evaluator = fit_evaluator(train, val, vocab_size, longest, context, n * len(test))
    masks = []
    for doc in test:
        tokens = doc.numpy()
        half = (len(tokens) - 1) // 2
        long, short = evaluator.log_probs(tokens, np.arange(half + 1, len(tokens)), longest, context)
        masks.append(torch.from_numpy(is_key(long, short)))
    return KeyTokens(masks, evaluator.weights)
