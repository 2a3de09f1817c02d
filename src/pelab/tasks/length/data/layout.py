"""Token rows of the two architectures, made from (question, answer).

* encoder (Ruoss et al. 2023): ``question SEP BLANK … BLANK`` -> the answer read at the blank positions, in
  one bidirectional pass.
* decoder (Kazemnejad et al. 2023): ``question SEP answer[:-1]`` with a causal mask; the answer is predicted
  from the SEP position on (teacher forcing in training, generated token by token at evaluation).

Targets are ``IGNORE`` outside the answer, so the loss and the metrics see the answer only.
"""

from __future__ import annotations

import torch

from pelab.tasks.length.data.tokens import IGNORE, special_tokens

__all__ = ["IGNORE", "decoder_rows", "encoder_rows"]


def encoder_rows(question: torch.Tensor, answer: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """question (B, q), answer (B, a) -> tokens, targets: (B, q + 1 + a)."""
    tokens = special_tokens(n_symbols)
    b, q, a = question.shape[0], question.shape[1], answer.shape[1]
    sep = torch.full((b, 1), tokens["sep"], dtype=torch.long)
    blanks = torch.full((b, a), tokens["blank"], dtype=torch.long)
    targets = torch.cat([torch.full((b, q + 1), IGNORE, dtype=torch.long), answer], dim=1)
    return torch.cat([question, sep, blanks], dim=1), targets


def decoder_rows(question: torch.Tensor, answer: torch.Tensor, n_symbols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """question (B, q), answer (B, a) -> tokens, targets: (B, q + a); position q (SEP) predicts answer[0]."""
    tokens = special_tokens(n_symbols)
    b, q = question.shape
    sep = torch.full((b, 1), tokens["sep"], dtype=torch.long)
    targets = torch.cat([torch.full((b, q), IGNORE, dtype=torch.long), answer], dim=1)
    return torch.cat([question, sep, answer[:, :-1]], dim=1), targets
