"""Evaluation-time variants of a scheme's runs (RoPE's context extensions, ``pelab.positional.rope_extensions.MENU``:
which scheme has them it declares, ``PositionalEncoding.variants``; recall's spread axis, ``pelab.tasks.length.evaluate.SPREAD``: the
same runs on rows whose pairs lie further apart), recorded under split names with a suffix, as pseudo-schemes
``<scheme>+PI``, ``<scheme>+yarn``, ``<scheme>+spread`` … beside the schemes: the rows the length and LM sections
tabulate and draw."""

from __future__ import annotations

import pandas as pd

from pelab.positional.recalibration import METHODS as RECALIBRATIONS
from pelab.positional.remapping import REMAPPINGS
from pelab.positional.rope_extensions import MENU
from pelab.positional.temperature import TEMPERATURE

# the split suffix of each variant's records and its label: HF's extensions, the training-free remappings
EXTENSIONS = {variant.suffix: variant.label for variant in MENU}
REMAPS = {remapping.suffix: remapping.label for remapping in REMAPPINGS}
# the same runs fine-tuned at M·L with each method in place (another model each: ``runner.recalibrate``)
TUNED = {**{m.suffix: m.label for m in RECALIBRATIONS}, **{m.untuned_suffix: m.untuned_label for m in RECALIBRATIONS
                                                             if m.before == m.name}}
# and, for every scheme: the log-length attention temperature (``positional.temperature``), the LM's crop-to-L
# baseline (``tasks.lm.evaluate.crop``), recall's spread axis and its masked-distractor axis
# (``tasks.length.evaluate.MASKED``)
VARIANTS = {**EXTENSIONS, **REMAPS, **TUNED, TEMPERATURE.suffix: TEMPERATURE.label, "_crop": "crop",
            "_spread": "spread", "_masked": "masked"}


def with_variants(records: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rows of evaluation-time variants (splits ``<split><suffix>``, e.g. ``test_pi``) as pseudo-schemes
    ``<scheme>+<label>`` (``rope+PI``) under the plain split names (each scheme's own rows only), and their names."""
    frames, names = [records[~records["split"].str.endswith(tuple(VARIANTS))]], []
    for suffix, label in VARIANTS.items():
        rows = records[records["split"].str.endswith(suffix)]
        for scheme in dict.fromkeys(rows["pe"]):
            mine = rows[rows["pe"] == scheme]
            frames.append(mine.assign(pe=f"{scheme}+{label}", split=mine["split"].str.removesuffix(suffix)))
            names.append(f"{scheme}+{label}")
    return pd.concat(frames, ignore_index=True), names


# the families of variants, each tabulated and drawn on its own against its base schemes
FAMILIES = {"RoPE's context extensions (HF names)": tuple(EXTENSIONS.values()),
            "training-free remappings of RoPE's distances": tuple(REMAPS.values()),
            "each extension fixed at s = M, on the run as trained (untuned) and fine-tuned at M·L with it (tuned)":
                tuple(TUNED.values()),
            "the log-length temperature": (TEMPERATURE.label,), "crop to L": ("crop",),
            "recall's spread axis, plain and with its filler masked": ("spread", "masked")}


def families(names: list[str]) -> dict[str, list[tuple[str, str]]]:
    """{family title: [(base scheme, variant name), …]} of the variants ``names`` (``<scheme>+<label>``), in their
    order, families in ``FAMILIES`` order, only those with a variant."""
    pairs = [(name.rpartition("+")[0], name) for name in names]
    found = {title: [(base, name) for base, name in pairs if name.rpartition("+")[2] in labels]
             for title, labels in FAMILIES.items()}
    return {title: found[title] for title in FAMILIES if found[title]}


def family_rows(pairs: list[tuple[str, str]]) -> list[str]:
    """The rows of one family's table: each base scheme, then its variants."""
    grouped: dict[str, list[str]] = {}
    for base, name in pairs:
        grouped.setdefault(base, []).append(name)
    return [row for base, variants in grouped.items() for row in (base, *variants)]


def variant_bases(names: list[str]) -> list[str]:
    """The schemes whose runs the extensions ``<scheme>+PI`` … extend, in order."""
    labels = set(EXTENSIONS.values())
    return list(dict.fromkeys(name.split("+")[0] for name in names if name.rpartition("+")[2] in labels))
