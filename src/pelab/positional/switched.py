"""The switches against attention dilution as records, read without torch: each switch is the module
``pelab/model/switches/<name>.py`` (found by convention: ``pelab.model.switches`` builds them), whose ``REFERENCE``
and ``SAYS`` are its record. A scheme takes them as a spec's ``switches`` (``schemes.yaml``: ``rope_sink: {of: rope,
switches: [sink]}``) or as ``<scheme>+<switch>`` anywhere a scheme is named: its positions, options and
evaluation-time variants unchanged, the model's self-attention switched. A new switch is one module there.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parent.parent / "model/switches"  # src/pelab/model/switches
NOT_SWITCHES = ("__init__", "base")


@dataclass(frozen=True)
class SwitchRecord:
    name: str
    reference: str  # the paper or code it follows, with its address
    says: str  # what it does, for the sentence that states a switched scheme's setup


@cache
def switch_records(folder: Path = FOLDER) -> dict[str, SwitchRecord]:
    """{name: its record} for every switch module of ``folder``, by name (the order a scheme's switches take)."""
    records = {}
    for path in sorted(folder.glob("*.py")):
        if path.stem in NOT_SWITCHES:
            continue
        values = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values[node.targets[0].id] = node.value
        try:
            reference, says = (ast.literal_eval(values[key]) for key in ("REFERENCE", "SAYS"))
        except (KeyError, ValueError):
            raise ValueError(f"{path}: a switch module states REFERENCE and SAYS as string constants") from None
        records[path.stem] = SwitchRecord(path.stem, str(reference), str(says))
    return records


SWITCHES: dict[str, str] = {name: r.reference for name, r in switch_records().items()}


def check_switches(names: tuple[str, ...] | list[str], where: str) -> tuple[str, ...]:
    """``names`` in ``SWITCHES``' order; one line naming an unknown one and the valid switches."""
    unknown = [n for n in names if n not in SWITCHES]
    if unknown:
        raise ValueError(f"unknown switch(es) {unknown} in {where}; valid switches: {', '.join(SWITCHES)}")
    return tuple(n for n in SWITCHES if n in names)


def switches_sentence(names: tuple[str, ...]) -> str:
    """What ``names`` do and their references, for the sentence that states a switched scheme's setup."""
    records = switch_records()
    return f"{'; '.join(records[s].says for s in names)} ({'; '.join(records[s].reference for s in names)})"
