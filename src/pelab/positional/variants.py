"""The evaluation-time variants a scheme's runs are scored with beyond the trained length (no retraining): each
scheme names its family (``PositionalEncoding.variants``), resolved here, so that a scheme's module never imports
its variants' (``rope_extensions`` builds on ``rope``); the length and LM evaluators call ``evaluation_variants``."""

from __future__ import annotations

from pelab.positional.base import PositionalEncoding
from pelab.positional.rope_extensions import MENU, Variant

MENUS: dict[str, tuple[Variant, ...]] = {"rope_extensions": MENU}  # family name -> its variants


def evaluation_variants(pe: PositionalEncoding) -> tuple[Variant, ...]:
    """The variants of ``pe``'s family (none where it names none)."""
    return MENUS.get(pe.variants, ())
