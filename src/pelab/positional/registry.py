"""The registry of positional schemes, keyed by the exact string users put in params (``pe=...``).

Adding a scheme: one module under ``pelab/positional/`` named like its key, one line here,
``conf/pe/<key>.yaml`` (plus its name in ``conf/pe/all.yaml``) and its options under ``positional`` in
``conf/config.yaml``.

A scheme declares its hyperparameters as a frozen dataclass ``Options`` (``NoOptions`` when it has none).
``scheme_options`` builds it from params with a one-line error for an unknown key, so no scheme silently
swallows options meant for another.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from pelab.positional.alibi import ALiBiPositionalEncoding
from pelab.positional.alibi_offset import OffsetALiBiPositionalEncoding
from pelab.positional.alibi_sym import SymmetricALiBiPositionalEncoding
from pelab.positional.base import PositionalEncoding, validated_options
from pelab.positional.command_a import CommandALayout
from pelab.positional.cope import CoPEPositionalEncoding
from pelab.positional.fire import FIREPositionalEncoding
from pelab.positional.fox import FoXPositionalEncoding
from pelab.positional.gemma3 import Gemma3Layout
from pelab.positional.gemma4 import Gemma4Layout
from pelab.positional.kerple import KERPLEPositionalEncoding
from pelab.positional.learned import LearnedPositionalEncoding
from pelab.positional.llama4 import Llama4Layout
from pelab.positional.none import NoPositionalEncoding
from pelab.positional.pope import PoPEPositionalEncoding
from pelab.positional.rand_learned import RandomizedLearnedPositionalEncoding
from pelab.positional.rand_rope import RandomizedRotaryPositionalEncoding
from pelab.positional.rand_sinusoidal import RandomizedSinusoidalPositionalEncoding
from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.rope_theta1k import RopeTheta1K
from pelab.positional.rope_theta1m import RopeTheta1M
from pelab.positional.rope_gate import RopeGate
from pelab.positional.rope_sink import RopeSink
from pelab.positional.rope_ssmax import RopeSsmax
from pelab.positional.rope_theta10 import RopeTheta10
from pelab.positional.rope_theta100 import RopeTheta100
from pelab.positional.sandwich import SandwichPositionalEncoding
from pelab.positional.sinusoidal import SinusoidalPositionalEncoding
from pelab.positional.smollm3 import SmolLM3Layout
from pelab.positional.stick_breaking import StickBreakingAttention
from pelab.positional.t5 import T5RelativePositionalEncoding
from pelab.positional.xpos import XPosPositionalEncoding

POSITIONAL_ENCODINGS: dict[str, type[PositionalEncoding]] = {
    "none": NoPositionalEncoding,
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEncoding,
    "rope": RotaryPositionalEncoding,
    "alibi": ALiBiPositionalEncoding,
    "alibi_sym": SymmetricALiBiPositionalEncoding,
    "t5": T5RelativePositionalEncoding,
    "alibi_offset": OffsetALiBiPositionalEncoding,  # the randomized-PE study's bidirectional ALiBi
    "fire": FIREPositionalEncoding,
    # the schemes of 2022-25: kernel biases beside ALiBi and T5, polar positions, a data-dependent decay,
    # positions counted by gates, attention without softmax
    "kerple": KERPLEPositionalEncoding,
    "sandwich": SandwichPositionalEncoding,
    "pope": PoPEPositionalEncoding,
    "fox": FoXPositionalEncoding,
    "cope": CoPEPositionalEncoding,
    "stick_breaking": StickBreakingAttention,
    # randomized positions (Ruoss et al. 2023): models that draw their positions (the length tasks) only
    "rand_sinusoidal": RandomizedSinusoidalPositionalEncoding,
    "rand_learned": RandomizedLearnedPositionalEncoding,
    "rand_rope": RandomizedRotaryPositionalEncoding,
    "xpos": XPosPositionalEncoding,  # causal attention only
    # RoPE's base θ as an axis of the length and LM studies (positional/rope_theta.py; rope itself is θ = 1e4)
    "rope_theta10": RopeTheta10,
    "rope_theta100": RopeTheta100,
    "rope_theta1k": RopeTheta1K,
    "rope_theta1m": RopeTheta1M,
    # layouts: a scheme and a span per layer, as the models of 2025-26 ship them (positional/layout.py)
    "smollm3": SmolLM3Layout,
    "command_a": CommandALayout,
    "llama4": Llama4Layout,
    "gemma3": Gemma3Layout,
    "gemma4": Gemma4Layout,
    # switches against attention dilution beside plain RoPE (positional/switched.py, model/switches.py)
    "rope_ssmax": RopeSsmax,
    "rope_sink": RopeSink,
    "rope_gate": RopeGate,
}


def scheme_names() -> list[str]:
    return list(POSITIONAL_ENCODINGS)


def check_scheme(name: str) -> str:
    if name not in POSITIONAL_ENCODINGS:
        raise ValueError(f"unknown positional scheme {name!r}; valid choices: {', '.join(scheme_names())}")
    return name


def scheme_of(pe: PositionalEncoding) -> str:
    """The registry name of a built scheme, by its exact class (``xpos`` subclasses RoPE and is not ``rope``)."""
    names = [name for name, cls in POSITIONAL_ENCODINGS.items() if type(pe) is cls]
    if not names:
        raise ValueError(f"{type(pe).__name__} is not a registered scheme; valid choices: {', '.join(scheme_names())}")
    return names[0]


def is_layout(name: str) -> bool:
    """Whether ``name`` is a layout (a scheme and span per layer, built for one depth: ``positional/layout.py``)
    rather than one scheme for every layer."""
    return POSITIONAL_ENCODINGS[check_scheme(name)].depth_specific


def draws_positions(name: str) -> bool:
    """Whether scheme ``name`` draws its positions at random in training (the randomized schemes)."""
    from pelab.positional.randomized import RandomizedPositions

    return issubclass(POSITIONAL_ENCODINGS[check_scheme(name)], RandomizedPositions)


def is_control(name: str) -> bool:
    """Whether scheme ``name`` gives the model no positional information: its class overrides none of the hooks
    and switches nothing (``none``, the control every study measures the others against; SSMax's log n tells a
    causal query its position)."""
    cls = POSITIONAL_ENCODINGS[check_scheme(name)]
    hooks = ("embed", "rotate", "bias", "layer_biases", "content_bias", "layer", "attention_weights")
    return all(getattr(cls, hook) is getattr(PositionalEncoding, hook) for hook in hooks) and not cls.switches


def option_names(name: str) -> list[str]:
    return sorted(f.name for f in fields(POSITIONAL_ENCODINGS[check_scheme(name)].Options))


def scheme_options(name: str, raw: dict[str, Any] | Any | None = None, where: str | None = None) -> Any:
    """The validated ``Options`` of scheme ``name`` from its params mapping (``None`` = the defaults).

    ``where`` names the params key in error messages (default ``positional.<name>``).
    """
    return validated_options(POSITIONAL_ENCODINGS[check_scheme(name)].Options, raw, where or f"positional.{name}")


def build_positional_encoding(
    name: str, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1,
    options: dict[str, Any] | Any | None = None,
) -> PositionalEncoding:
    """Build the scheme registered as ``name`` with its ``options`` (a mapping or its ``Options``) for a stack of
    ``n_layers`` layers."""
    cls = POSITIONAL_ENCODINGS[check_scheme(name)]
    return cls(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers,
               **asdict(scheme_options(name, options)))
