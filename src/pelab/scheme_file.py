"""``src/pelab/positional/schemes.yaml`` read as data, without torch: its entries and the module each names
(``positional.registry`` builds the schemes from them; the params composition names each run's module with
``module_of``, before any torch is imported)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

SCHEMES_FILE = Path(__file__).resolve().parent / "positional/schemes.yaml"


@cache
def entries(path: Path = SCHEMES_FILE) -> dict[str, Any]:
    """{name: its entry} in the file's order."""
    return {str(name): entry for name, entry in (yaml.safe_load(path.read_text()) or {}).items()}


def class_path(name: str, entry: Any, path: Path = SCHEMES_FILE) -> str:
    """``<module>.<Class>`` under ``pelab.positional`` of entry ``name``: a base scheme's class in the module named
    like it; a spec's ``of`` (a base scheme's name, or ``<module>.<Class>``)."""
    if isinstance(entry, str):
        return f"{name}.{entry}"
    of = str(entry.get("of", "")) if isinstance(entry, dict) else ""
    if "." in of:
        return of
    base = entries(path).get(of)
    if not isinstance(base, str):
        raise ValueError(f"{path.name}: {name}: of={of!r} is not a base scheme nor <module>.<Class>")
    return f"{of}.{base}"


def entry_of(name: str, path: Path = SCHEMES_FILE) -> Any:
    """Scheme ``name``'s entry: the file's, or for ``<scheme>+<switch>[+<switch>…]`` (the switches as an axis beside
    any scheme: ``alibi+sink``) the scheme's entry with those switches added; None for a name neither gives."""
    entry = entries(path).get(name)
    if entry is not None or "+" not in name:
        return entry
    base, *switches = name.split("+")
    entry = entries(path).get(base)
    if entry is None:
        return None
    entry = {"of": base} if isinstance(entry, str) else dict(entry)
    return {**entry, "switches": [*entry.get("switches", ()), *switches]}


def module_of(name: str, path: Path = SCHEMES_FILE) -> str | None:
    """The module (``rope``) of scheme ``name``'s class, or None for a name the file does not hold."""
    entry = entry_of(name, path)
    return None if entry is None else class_path(name, entry, path).rsplit(".", 1)[0]
