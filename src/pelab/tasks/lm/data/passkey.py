"""Passkey rows: a random number hidden at a chosen depth in repeated filler text, then the question; the model
must continue with the number (Mohtashami & Jaggi 2023, https://arxiv.org/abs/2305.16300, appendix; the format
YaRN and the long-context literature use), shortened so that a row fits in a short L: no instruction preamble,
and the key said once ("The pass key is 40213. Remember it." instead of "… Remember it. 40213 is the pass key."):

    filler… The pass key is 40213. Remember it. …filler What is the pass key? The pass key is 40213
    |<- depth·F ->|<---------- key sentence ---------->|<- (1−depth)·F ->|<------- question ------->|<key>

F = T − len(key sentence) − len(question) − digits: the filler tokens, cycled from the filler sentences and cut
at a token. Every digit is one token (the tokenizer splits digits), and a row is scored on the key's digit tokens
after the question only (``answer_slice``): exact when every one is the model's argmax given the true prefix,
which is exactly when greedy generation would write the whole key.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tokenizers import Tokenizer

from pelab.device import autocast

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
KEY_SENTENCE = "The pass key is {key}. Remember it."
QUESTION = "What is the pass key? The pass key is"
DIGITS = 5


@dataclass(frozen=True)
class PasskeyFormat:
    """The token pieces of a passkey row, encoded once with the study's tokenizer."""

    filler: list[int]
    key_before: list[int]  # the key sentence's tokens before and after the key
    key_after: list[int]
    question: list[int]
    digits: list[int]  # token id of "0".."9"

    @classmethod
    def of(cls, tokenizer: Tokenizer) -> PasskeyFormat:
        def ids(text: str) -> list[int]:
            return tokenizer.encode(text).ids

        digits = [tokenizer.token_to_id(str(d)) for d in range(10)]
        if None in digits:
            raise ValueError("the LM tokenizer has no token for every digit 0-9")
        before, after = KEY_SENTENCE.split("{key}")
        space = tokenizer.token_to_id("▁")  # the word mark before a number (digits are split off it)
        return cls(ids(" ".join([FILLER] * 4)), ids(before.rstrip()) + [space], ids(after), ids(QUESTION) + [space],
                   digits)

    def overhead(self) -> int:
        """Tokens of a row that are not filler."""
        return len(self.key_before) + len(self.key_after) + len(self.question) + 2 * DIGITS

    def check(self, context: int) -> None:
        """A row of the training length must hold the key sentence and the question (``lm.data.context``)."""
        if self.overhead() > context:
            raise ValueError(f"lm.data.context={context}: a passkey row needs {self.overhead()} tokens with this "
                             "tokenizer; raise lm.data.context")

    def row(self, length: int, depth: float, key: list[int]) -> torch.Tensor:
        """(length,) token ids: filler with the key sentence at ``depth`` (0: first, 1: just before the question),
        ending with the question and the key's ``DIGITS`` digit tokens (the answer)."""
        n_filler = length - self.overhead()
        if n_filler < 0:
            raise ValueError(f"a passkey row needs at least {self.overhead()} tokens, got length {length}")
        filler = [self.filler[i % len(self.filler)] for i in range(n_filler)]
        at = round(depth * n_filler)
        number = [self.digits[d] for d in key]
        sentence = self.key_before + number + self.key_after
        tokens = filler[:at] + sentence + filler[at:] + self.question + number
        return torch.tensor(tokens, dtype=torch.long)

    def key_position(self, length: int, depth: float) -> int:
        """Index of the key's first digit in the key sentence of a row (where ``row`` puts it)."""
        return round(depth * (length - self.overhead())) + len(self.key_before)


def answer_slice(length: int) -> slice:
    """The positions of a row of ``length`` tokens whose next-token targets are the answer digits: the logits at
    length-DIGITS-1 .. length-2 predict tokens length-DIGITS .. length-1."""
    return slice(length - DIGITS - 1, length - 1)


def passkey_rows(fmt: PasskeyFormat, length: int, depths: list[float], generator: torch.Generator) -> torch.Tensor:
    """(len(depths), length) rows, one per depth, with keys drawn from ``generator``."""
    keys = torch.randint(0, 10, (len(depths), DIGITS), generator=generator).tolist()
    return torch.stack([fmt.row(length, depth, key) for depth, key in zip(depths, keys)])


@torch.no_grad()
def greedy_key(model: SequenceTransformer, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """rows (B, T) ending with the question and the key's ``DIGITS`` digits -> (the digits greedy decoding writes
    after the question, free-running: each step's argmax fed back, (B, DIGITS); the teacher-forced argmax of each
    digit given the true digits before it, (B, DIGITS)). A row is re-read only from its first wrong digit on, at most
    ``DIGITS`` forward passes; a causal model's logits before a position do not depend on it."""
    length = rows.shape[1]
    answer = answer_slice(length)
    with autocast(rows.device):
        logits, _ = model(rows)  # (B, T, V)
    forced = logits[:, answer].argmax(-1)  # (B, DIGITS)
    written, current = forced.clone(), rows.clone()
    for j in range(DIGITS - 1):  # digit j written: the later digits are read after it
        wrong = (written[:, j] != current[:, length - DIGITS + j]).nonzero().flatten()
        if len(wrong) == 0:
            continue
        current[wrong, length - DIGITS + j] = written[wrong, j]
        with autocast(rows.device):
            logits, _ = model(current[wrong])
        written[wrong, j + 1:] = logits[:, answer].argmax(-1)[:, j + 1:]
    return written, forced
