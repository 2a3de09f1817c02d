"""The registry of positional schemes, keyed by the exact string users put in params (``pe=...``), read from
``schemes.yaml`` beside this module.

**How a name is found, and what a run depends on** (the one place this is said). ``schemes.yaml`` maps each name to
either a base scheme's class, found by convention in the module named like the scheme (``rope:
RotaryPositionalEncoding`` is ``pelab/positional/rope.py``), or a spec: a base scheme (``of``) plus option defaults,
switches and randomized positions, held as data (``rope_theta10: {of: rope, base: 10.0}``); ``<scheme>+<switch>``
names a registered scheme with a switch added, without an entry. Nothing but this module imports a scheme's module
by name, and no file lists every scheme but ``schemes.yaml``, whose text is never hashed whole: a stage depends on
the check stage's record of its own scheme (its entry and the sha256 of its class's and switches' modules,
``pelab.runner.scheme_records``), and a kept run's fingerprint hashes the entry's ``training_record`` and the modules
its class and switches import (``pelab.closure``, ``pelab.runner.kept_runs``). Adding a scheme (a module and its
line, or a spec entry alone) or a switch therefore re-runs and retrains nothing kept.

A scheme declares its hyperparameters as a frozen dataclass ``Options`` (``NoOptions`` when it has none).
``scheme_options`` builds it from params over the spec's defaults, with a one-line error for an unknown key, so no
scheme silently swallows options meant for another.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from pelab.positional.base import PositionalEncoding, Usage, validated_options
from pelab.positional.randomized import RandomizedPositions, randomized_options
from pelab.positional.switched import SWITCHES, check_switches, switches_sentence
from pelab.scheme_file import SCHEMES_FILE, class_path, entries

PACKAGE = "pelab.positional"
SPEC_KEYS = ("of", "switches", "randomized", "about")  # a spec's own keys; the rest are option defaults


@dataclass(frozen=True)
class SchemeSpec:
    """One registered name: a base class, the defaults its options take here, its switches, whether its positions are
    drawn at random in training, and a line about it."""

    name: str
    cls: type[PositionalEncoding]
    defaults: dict[str, Any] = field(default_factory=dict)
    switches: tuple[str, ...] = ()
    randomized: bool = False
    about: str = ""

    @property
    def module(self) -> str:
        """The module of its class (``pelab.positional.rope`` for every RoPE spec)."""
        return self.cls.__module__

    @property
    def graph_safe(self) -> bool:
        """Whether a CUDA graph replays its training faithfully (``PositionalEncoding.graph_safe``; randomized
        positions are drawn on the host)."""
        return self.cls.graph_safe and not self.randomized

    @property
    def options_type(self) -> type:
        return randomized_options(self.cls) if self.randomized else self.cls.Options

    def training_record(self) -> dict[str, Any]:
        """What a run is trained from in this entry (its line ``about`` aside): hashed into a kept run's fingerprint."""
        return {"class": f"{self.module}.{self.cls.__qualname__}", "defaults": self.defaults,
                "switches": list(self.switches), "randomized": self.randomized}


def _class(path: str, where: str) -> type[PositionalEncoding]:
    """The class at ``<module>.<Class>`` of pelab.positional."""
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(f"{PACKAGE}.{module}"), name, None)
    except ModuleNotFoundError:
        raise ValueError(f"{where}: no module {PACKAGE}.{module} for {path!r} (a base scheme's class lives in "
                         f"src/pelab/positional/<its name>.py)") from None
    if not (isinstance(cls, type) and issubclass(cls, PositionalEncoding)):
        raise ValueError(f"{where}: {path!r} is not a positional scheme class of pelab.positional")
    return cls


def _spec(name: str, entry: Any, path: Path) -> SchemeSpec:
    where = f"{path.name}: {name}"
    if not isinstance(entry, (str, dict)) or (isinstance(entry, dict) and "of" not in entry):
        raise ValueError(f"{where} must be a class name or a mapping with 'of'; got {entry!r}")
    cls = _class(class_path(name, entry, path), where)
    if isinstance(entry, str):  # a base scheme: the class in the module named like it
        return SchemeSpec(name, cls)
    defaults = {k: v for k, v in entry.items() if k not in SPEC_KEYS}
    return SchemeSpec(name, cls, defaults, check_switches(entry.get("switches", ()), where),
                      bool(entry.get("randomized", False)), str(entry.get("about", "")))


def load_schemes(path: Path = SCHEMES_FILE) -> dict[str, SchemeSpec]:
    """Every entry of ``path``, in its order (``pelab.scheme_file`` reads it)."""
    return {name: _spec(name, entry, path) for name, entry in entries(path).items()}


# name -> its spec. A plugin or a test may add one (``SchemeSpec(name, cls)``); files change nothing once loaded.
SCHEMES: dict[str, SchemeSpec] = load_schemes()


def scheme_names() -> list[str]:
    return list(SCHEMES)


def check_scheme(name: str) -> str:
    if name not in SCHEMES and _switched(name) is None:
        raise ValueError(f"unknown positional scheme {name!r}; valid choices: {', '.join(scheme_names())} "
                         f"(or <scheme>+<switch>, switches: {', '.join(SWITCHES)})")
    return name


def scheme_spec(name: str) -> SchemeSpec:
    return SCHEMES.get(name) or _switched(check_scheme(name))


_SWITCHED: dict[str, SchemeSpec] = {}


def _switched(name: str) -> SchemeSpec | None:
    """``<scheme>+<switch>[+…]``: the switches as an axis beside any registered scheme: its spec with those switches
    added, built once (its base may be a plugin's); None where the part before ``+`` is no scheme. An unknown switch
    fails in one line."""
    if name not in _SWITCHED:
        base, *added = name.split("+")
        if not added or base not in SCHEMES:
            return None
        spec = SCHEMES[base]
        switches = check_switches([*spec.switches, *added], f"scheme {name!r}")
        if switches == spec.switches:
            raise ValueError(f"{name!r} adds no switch to {base!r}; switches: {', '.join(SWITCHES)}")
        _SWITCHED[name] = SchemeSpec(name, spec.cls, dict(spec.defaults), switches, spec.randomized, spec.about)
    return _SWITCHED[name]


def scheme_of(pe: PositionalEncoding) -> str:
    """The registry name a built scheme was built as (``build_positional_encoding``)."""
    name = getattr(pe, "name", None)
    if not isinstance(name, str) or (name not in SCHEMES and _switched(name) is None):
        raise ValueError(f"{type(pe).__name__} was not built from the registry; valid choices: "
                         f"{', '.join(scheme_names())}")
    return name


def is_layout(name: str) -> bool:
    """Whether ``name`` is a layout (a scheme and span per layer, built for one depth: ``positional/layout.py``)
    rather than one scheme for every layer."""
    return scheme_spec(name).cls.depth_specific


def draws_positions(name: str) -> bool:
    """Whether scheme ``name`` draws its positions at random in training (the randomized schemes)."""
    return scheme_spec(name).randomized


def is_control(name: str) -> bool:
    """Whether scheme ``name`` gives the model no positional information: its class overrides none of the hooks
    and it switches nothing (``none``, the control every study measures the others against; SSMax's log n tells a
    causal query its position)."""
    spec = scheme_spec(name)
    hooks = ("embed", "rotate", "bias", "layer_biases", "content_bias", "layer", "attention_weights")
    return (all(getattr(spec.cls, hook) is getattr(PositionalEncoding, hook) for hook in hooks)
            and not spec.switches and not spec.randomized)


def switched_from(name: str) -> str | None:
    """The registered scheme a switched scheme switches (the same class and defaults, no switch), or None for an
    unswitched one."""
    spec = scheme_spec(name)
    if not spec.switches:
        return None
    return next((other for other, s in SCHEMES.items() if s.cls is spec.cls and s.defaults == spec.defaults
                 and s.randomized == spec.randomized and not s.switches), None)


def option_names(name: str) -> list[str]:
    return sorted(f.name for f in fields(scheme_spec(name).options_type))


def _over(defaults: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` over ``defaults``; a mapping-valued option (a layout's layer type) merges key by key."""
    merged = dict(defaults)
    for key, value in raw.items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) and isinstance(merged.get(key), dict) \
            else value
    return merged


def scheme_options(name: str, raw: dict[str, Any] | Any | None = None, where: str | None = None) -> Any:
    """The validated ``Options`` of scheme ``name`` from its params mapping over the spec's defaults (``None`` = the
    defaults). ``where`` names the params key in error messages (default ``positional.<name>``)."""
    spec = scheme_spec(name)
    options = spec.options_type
    if isinstance(raw, options):
        return raw
    return validated_options(options, _over(spec.defaults, dict(raw or {})), where or f"positional.{name}")


def build_positional_encoding(
    name: str, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1,
    options: dict[str, Any] | Any | None = None,
) -> PositionalEncoding:
    """Build the scheme registered as ``name`` with its ``options`` (a mapping or its ``Options``) for a stack of
    ``n_layers`` layers. The built module knows its ``name``, ``switches`` and ``about``."""
    spec = scheme_spec(name)
    values = asdict(scheme_options(name, options))
    if spec.randomized:
        pe: PositionalEncoding = RandomizedPositions(spec.cls, d_model=d_model, n_heads=n_heads, causal=causal,
                                                     n_layers=n_layers, **values)
    else:
        pe = spec.cls(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers, **values)
    pe.name, pe.switches, pe.about = name, spec.switches, spec.about
    return pe


def describe(pe: PositionalEncoding, usage: Usage) -> str | None:
    """The sentence that states a built scheme's setup where ``usage`` says it serves: its own
    (``PositionalEncoding.describe``) and its switches'."""
    own = pe.describe(usage)
    if not pe.switches:
        return own
    return f"{own.rstrip('.') + '; ' if own else ''}{switches_sentence(pe.switches)}."
