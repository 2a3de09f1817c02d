"""``none``: no positional information at all (the control).

Without positions a Transformer encoder is permutation-equivariant, so the copy task is
unsolvable beyond chance: this scheme is the floor every other scheme is measured against.
"""

from __future__ import annotations

from pelab.positional.base import PositionalEncoding


class NoPositionalEncoding(PositionalEncoding):
    """Every hook is the base class's no-op."""
