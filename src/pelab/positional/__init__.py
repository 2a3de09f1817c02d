"""Positional encodings behind one interface (see ``base.PositionalEncoding``) and a registry (``registry``: the
names of ``schemes.yaml``)."""

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.registry import (
    SCHEMES,
    SchemeSpec,
    build_positional_encoding,
    check_scheme,
    describe,
    draws_positions,
    is_control,
    is_layout,
    option_names,
    scheme_names,
    scheme_of,
    scheme_options,
    scheme_spec,
    switched_from,
)

__all__ = [
    "SCHEMES",
    "PositionalEncoding",
    "SchemeSpec",
    "Usage",
    "build_positional_encoding",
    "check_scheme",
    "describe",
    "draws_positions",
    "is_control",
    "is_layout",
    "option_names",
    "scheme_names",
    "scheme_of",
    "scheme_options",
    "scheme_spec",
    "switched_from",
]
