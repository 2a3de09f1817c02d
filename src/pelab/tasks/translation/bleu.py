"""Corpus-level translation metrics on detokenized, cased text.

* **sacreBLEU** (Post 2018, https://aclanthology.org/W18-6319): the headline, reported with its signature
  (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:…``) so the number is reproducible.
* **chrF** (Popović 2015) through sacreBLEU, with its signature.
* **NLTK** ``corpus_bleu`` on word tokens (sacreBLEU's 13a tokenizer), ×100 — comparable with sacreBLEU —
  and on raw strings, which NLTK iterates as *characters*: what the reference report computed (its
  "BLEU-4" of 0.32–0.56 is a character 4-gram score, not word BLEU). NLTK's arithmetic is re-written here
  (``nltk_corpus_bleu``), operation for operation, because importing NLTK costs every evaluating process 2.6 s
  (it imports scipy.stats, scikit-learn and pandas); ``tests/test_translation.py`` checks it against NLTK.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Sequence

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

_WORDS = Tokenizer13a()


def _check(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references; they must pair up")
    if not hypotheses:
        raise ValueError("cannot score an empty corpus")


def sacrebleu_score(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """Corpus BLEU (0–100) and its sacreBLEU signature; one reference per sentence."""
    _check(hypotheses, references)
    metric = BLEU()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return float(score.score), str(metric.get_signature())


def chrf_score(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """Corpus chrF (0–100) and its sacreBLEU signature."""
    _check(hypotheses, references)
    metric = CHRF()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return float(score.score), str(metric.get_signature())


def word_tokens(sentence: str) -> list[str]:
    """13a tokenization (sacreBLEU's default, the WMT ``mteval-v13a`` rules), split on spaces."""
    return _WORDS(sentence).split()


def _ngrams(sequence: Sequence, n: int) -> Counter:
    return Counter(tuple(sequence[i:i + n]) for i in range(len(sequence) - n + 1))


def nltk_corpus_bleu(references: Sequence[Sequence], hypotheses: Sequence[Sequence], order: int = 4) -> float:
    """NLTK 3.10's ``corpus_bleu`` with its defaults (uniform weights, ``SmoothingFunction().method0``), one
    reference per hypothesis; each a sequence of tokens (a string is a sequence of characters).
    Papineni et al. 2002 (https://aclanthology.org/P02-1040), as NLTK computes it
    (https://github.com/nltk/nltk/blob/develop/nltk/translate/bleu_score.py): clipped n-gram counts summed over the corpus, each order's denominator at least 1 per sentence;
    an order with no match enters the geometric mean as ``sys.float_info.min`` (a score of about 1e-77, not 0);
    no unigram match scores exactly 0."""
    matched, total = [0] * order, [0] * order
    hyp_length = ref_length = 0
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        for n in range(1, order + 1):
            counts, available = _ngrams(hypothesis, n), _ngrams(reference, n)
            matched[n - 1] += sum(min(count, available[gram]) for gram, count in counts.items())
            total[n - 1] += max(1, sum(counts.values()))
        hyp_length += len(hypothesis)
        ref_length += len(reference)  # the closest reference length: there is one
    if matched[0] == 0:
        return 0.0
    if hyp_length > ref_length:  # brevity penalty
        penalty = 1.0
    elif hyp_length == 0:
        penalty = 0.0
    else:
        penalty = math.exp(1 - ref_length / hyp_length)
    precisions = [m / t if m else sys.float_info.min for m, t in zip(matched, total)]
    return penalty * math.exp(math.fsum(math.log(p) / order for p in precisions))


def nltk_word_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """NLTK corpus BLEU-4 (×100, no smoothing) over 13a word tokens."""
    _check(hypotheses, references)
    return 100.0 * nltk_corpus_bleu([word_tokens(r) for r in references], [word_tokens(h) for h in hypotheses])


def nltk_char_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """NLTK corpus BLEU-4 (×100) on raw strings, i.e. character n-grams — the reference report's mistake."""
    _check(hypotheses, references)
    return 100.0 * nltk_corpus_bleu(list(references), list(hypotheses))


def score_corpus(hypotheses: Sequence[str], references: Sequence[str],
                 nltk: bool = True) -> tuple[dict[str, float], dict[str, str]]:
    """{"bleu", "chrf"} and, with ``nltk``, {"nltk_bleu", "nltk_char_bleu"} (all 0–100), and the sacreBLEU
    signatures."""
    bleu, bleu_signature = sacrebleu_score(hypotheses, references)
    chrf, chrf_signature = chrf_score(hypotheses, references)
    scores = {"bleu": bleu, "chrf": chrf}
    if nltk:
        scores.update(nltk_bleu=nltk_word_bleu(hypotheses, references),
                      nltk_char_bleu=nltk_char_bleu(hypotheses, references))
    return scores, {"bleu": bleu_signature, "chrf": chrf_signature}
