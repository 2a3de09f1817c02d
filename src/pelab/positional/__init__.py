"""Positional encodings behind one interface (see ``base.PositionalEncoding``) and a registry."""

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.registry import (
    POSITIONAL_ENCODINGS,
    build_positional_encoding,
    check_scheme,
    draws_positions,
    is_control,
    is_layout,
    option_names,
    scheme_names,
    scheme_of,
    scheme_options,
)

__all__ = [
    "POSITIONAL_ENCODINGS",
    "PositionalEncoding",
    "Usage",
    "build_positional_encoding",
    "check_scheme",
    "draws_positions",
    "is_control",
    "is_layout",
    "option_names",
    "scheme_names",
    "scheme_of",
    "scheme_options",
]
