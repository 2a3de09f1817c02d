"""``src/pelab/positional/schemes.yaml`` read as data, without torch: its entries and the class each names
(``positional.registry`` builds the schemes from them)."""

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
