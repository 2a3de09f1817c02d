"""The length-generalisation study: algorithmic string tasks trained on lengths 1..N and scored at every
length 1..M (M >= 4N in the full profile), in a bidirectional encoder and a causal decoder-only model.

After the randomized-positional-encodings study (Ruoss et al. 2023, https://arxiv.org/abs/2305.16843: the
answer is read at blank positions after the input, one length per batch) and the NoPE study (Kazemnejad et al.
2023, https://arxiv.org/abs/2305.19466: decoder-only, the answer generated after a separator). One folder
serves every problem (``data/problems/``) and both architectures; the registry names them ``<problem>`` and
``<problem>_causal`` (``task.py``).
"""
