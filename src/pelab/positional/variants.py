"""The evaluation-time variants a scheme's runs are scored with beyond the trained length (no retraining): each
scheme names its family (``PositionalEncoding.variants``), resolved here, so that a scheme's module never imports
its variants' (``rope_extensions`` builds on ``rope``); the length and LM evaluators call ``evaluation_variants``."""

from __future__ import annotations

from pelab.positional.base import PositionalEncoding
from pelab.positional.remapping import REMAPPINGS, Remapping
from pelab.positional.rope_extensions import MENU, Variant

# family name -> its variants: RoPE's runs with HF's context extensions and the training-free remappings
MENUS: dict[str, tuple[Variant | Remapping, ...]] = {"rope_extensions": (*MENU, *REMAPPINGS)}


def evaluation_variants(pe: PositionalEncoding) -> tuple[Variant | Remapping, ...]:
    """The variants of ``pe``'s family (none where it names none)."""
    return MENUS.get(pe.variants, ())
