"""Corpus-level translation metrics on detokenized, cased text.

* **sacreBLEU** (Post 2018, https://aclanthology.org/W18-6319): the headline, reported with its signature
  (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:…``) so the number is reproducible.
* **chrF** (Popović 2015) through sacreBLEU, with its signature.
* **NLTK** ``corpus_bleu`` on word tokens (sacreBLEU's 13a tokenizer), ×100 — comparable with sacreBLEU —
  and on raw strings, which NLTK iterates as *characters*: what the reference report computed (its
  "BLEU-4" of 0.32–0.56 is a character 4-gram score, not word BLEU).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu
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


def nltk_word_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """NLTK corpus BLEU-4 (×100, no smoothing) over 13a word tokens."""
    _check(hypotheses, references)
    with warnings.catch_warnings():  # NLTK warns when a higher-order n-gram has no match; the score is then 0
        warnings.simplefilter("ignore")
        score = nltk_corpus_bleu([[word_tokens(r)] for r in references], [word_tokens(h) for h in hypotheses])
    return 100.0 * float(score)


def nltk_char_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """NLTK corpus BLEU-4 (×100) on raw strings, i.e. character n-grams — the reference report's mistake."""
    _check(hypotheses, references)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score = nltk_corpus_bleu([[r] for r in references], list(hypotheses))
    return 100.0 * float(score)


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
