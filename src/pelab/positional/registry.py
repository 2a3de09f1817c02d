"""The registry of positional schemes, keyed by the exact string users put in params (``pe=...``).

Adding a scheme: one module under ``pelab/positional/`` named like its key, one line here,
and ``conf/pe/<key>.yaml`` (plus its name in ``conf/pe/all.yaml``).
"""

from __future__ import annotations

from pelab.positional.alibi import ALiBiPositionalEncoding
from pelab.positional.alibi_sym import SymmetricALiBiPositionalEncoding
from pelab.positional.base import PositionalEncoding
from pelab.positional.learned import LearnedPositionalEncoding
from pelab.positional.none import NoPositionalEncoding
from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.sinusoidal import SinusoidalPositionalEncoding
from pelab.positional.t5 import T5RelativePositionalEncoding

POSITIONAL_ENCODINGS: dict[str, type[PositionalEncoding]] = {
    "none": NoPositionalEncoding,
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEncoding,
    "rope": RotaryPositionalEncoding,
    "alibi": ALiBiPositionalEncoding,
    "alibi_sym": SymmetricALiBiPositionalEncoding,
    "t5": T5RelativePositionalEncoding,
}


def scheme_names() -> list[str]:
    return list(POSITIONAL_ENCODINGS)


def check_scheme(name: str) -> str:
    if name not in POSITIONAL_ENCODINGS:
        raise ValueError(f"unknown positional scheme {name!r}; valid choices: {', '.join(scheme_names())}")
    return name


def build_positional_encoding(
    name: str, *, d_model: int, n_heads: int, causal: bool = False, **options: object
) -> PositionalEncoding:
    """Build the scheme registered as ``name``; ``options`` are its hyperparameters (PositionalConfig)."""
    cls = POSITIONAL_ENCODINGS[check_scheme(name)]
    return cls(d_model=d_model, n_heads=n_heads, causal=causal, **options)
