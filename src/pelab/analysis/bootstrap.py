"""sacreBLEU's paired bootstrap resampling between systems (Koehn 2004, https://aclanthology.org/W04-3250/), the
field's standard test for a BLEU difference on one test set.

It answers a different question from the sign-flip test over seeds: for one trained model of each scheme, is the
BLEU difference larger than the sampling noise of the test sentences? It says nothing about another training seed,
so the aggregate stage runs it once per seed (``pelab.tasks.translation.paired``) and the report shows how
many seeds agree.
"""

from __future__ import annotations

import math

from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

RESAMPLES = 1000  # sacreBLEU's default for --paired-bs


def paired_bootstrap(baseline: list[str], systems: dict[str, list[str]], references: list[str],
                     resamples: int = RESAMPLES) -> dict[str, dict[str, float]]:
    """{system: {"bleu", "baseline_bleu", "p"}}: sacreBLEU's paired bootstrap p of each system against the
    baseline on the same references (its fixed resampling seed, SACREBLEU_SEED=12345 by default)."""
    named = [("baseline", baseline), *systems.items()]
    test = PairedTest(named, {"BLEU": BLEU(references=[references])}, references=None, test_type="bs",
                      n_samples=resamples)
    _, scores = test()
    results = scores["BLEU"]
    base = results[0].score
    out = {}
    for name, r in zip(scores["System"][1:], results[1:]):
        # sacreBLEU counts resamples strictly beyond the observed difference, so identical outputs get
        # p = 1/(n+1) instead of 1; there is nothing to test then.
        p = 1.0 if systems[name] == baseline else (r.p_value if r.p_value is not None else math.nan)
        out[name] = {"bleu": r.score, "baseline_bleu": base, "p": p}
    return out
