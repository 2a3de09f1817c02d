"""The schemes that are one module each, keyed by the name users put in params: what the registry starts from, and
what a layout's layers are built from (``pelab.positional.layout`` reads this, not the registry, which lists the
layouts themselves)."""

from __future__ import annotations

from pelab.positional.alibi import ALiBiPositionalEncoding
from pelab.positional.alibi_offset import OffsetALiBiPositionalEncoding
from pelab.positional.alibi_sym import SymmetricALiBiPositionalEncoding
from pelab.positional.base import PositionalEncoding
from pelab.positional.fire import FIREPositionalEncoding
from pelab.positional.learned import LearnedPositionalEncoding
from pelab.positional.none import NoPositionalEncoding
from pelab.positional.rand_learned import RandomizedLearnedPositionalEncoding
from pelab.positional.rand_rope import RandomizedRotaryPositionalEncoding
from pelab.positional.rand_sinusoidal import RandomizedSinusoidalPositionalEncoding
from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.sinusoidal import SinusoidalPositionalEncoding
from pelab.positional.t5 import T5RelativePositionalEncoding
from pelab.positional.xpos import XPosPositionalEncoding

SCHEMES: dict[str, type[PositionalEncoding]] = {
    "none": NoPositionalEncoding,
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEncoding,
    "rope": RotaryPositionalEncoding,
    "alibi": ALiBiPositionalEncoding,
    "alibi_sym": SymmetricALiBiPositionalEncoding,
    "t5": T5RelativePositionalEncoding,
    "alibi_offset": OffsetALiBiPositionalEncoding,  # the randomized-PE study's bidirectional ALiBi
    "fire": FIREPositionalEncoding,
    # randomized positions (Ruoss et al. 2023): models that draw their positions (the length tasks) only
    "rand_sinusoidal": RandomizedSinusoidalPositionalEncoding,
    "rand_learned": RandomizedLearnedPositionalEncoding,
    "rand_rope": RandomizedRotaryPositionalEncoding,
    "xpos": XPosPositionalEncoding,  # causal attention only
}
