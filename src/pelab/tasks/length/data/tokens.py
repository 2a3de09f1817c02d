"""The length study's special tokens, after a problem's symbols, and the target that no loss or metric reads."""

from __future__ import annotations

IGNORE = -100  # the target of every position outside the answer


def special_tokens(n_symbols: int) -> dict[str, int]:
    """``SEP`` (ends the question), ``BLANK`` (an answer slot of the encoder layout), ``PLUS`` (binary addition)."""
    return {"sep": n_symbols, "blank": n_symbols + 1, "plus": n_symbols + 2}


def vocab_size(n_symbols: int) -> int:
    return n_symbols + 3
