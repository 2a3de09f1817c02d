"""IWSLT 2017 French -> English (TED talks; Cettolo et al. 2017) through HF ``datasets``.

For users with the network: ``dvc exp run -S translation.corpus=iwslt2017``. The Hub copy is
``IWSLT/iwslt2017``, config ``iwslt2017-fr-en``, rows ``{"translation": {"fr": ..., "en": ...}}`` in
splits train / validation / test. That repository ships a loading script, which ``datasets`` >= 4 no
longer runs; it is then read from the Hub's Parquet export of the same config instead.
"""

from __future__ import annotations

from typing import Any

HUB_ID = "IWSLT/iwslt2017"
HUB_CONFIG = "iwslt2017-fr-en"
PARQUET_REVISION = "refs/convert/parquet"
# HF split -> our split name
SPLITS = {"train": "train", "validation": "val", "test": "test"}
EVAL_SPLITS = ("test",)


def normalize(raw: Any) -> dict[str, dict[str, list[str]]]:
    """A DatasetDict in the Hub schema -> {split: {"fr": [...], "en": [...]}} with our split names."""
    missing = [name for name in SPLITS if name not in raw]
    if missing:
        raise ValueError(f"{HUB_ID} ({HUB_CONFIG}) lacks split(s) {missing}; found {sorted(raw)}")
    out = {}
    for hf_split, ours in SPLITS.items():
        if "translation" not in raw[hf_split].column_names:
            raise ValueError(
                f"{HUB_ID} split {hf_split!r} has columns {raw[hf_split].column_names}, expected 'translation'"
            )
        pairs = raw[hf_split]["translation"]
        out[ours] = {"fr": [p["fr"] for p in pairs], "en": [p["en"] for p in pairs]}
    return out


def load_iwslt2017() -> dict[str, dict[str, list[str]]]:
    """Download (or reuse HF's cache of) IWSLT 2017 fr-en and return it in our schema."""
    import datasets

    try:
        try:
            raw = datasets.load_dataset(HUB_ID, HUB_CONFIG)
        except RuntimeError as err:  # "Dataset scripts are no longer supported"
            if "scripts" not in str(err):
                raise
            raw = datasets.load_dataset(HUB_ID, revision=PARQUET_REVISION, data_dir=HUB_CONFIG)
    except (ConnectionError, OSError) as err:
        raise FileNotFoundError(
            f"could not load {HUB_ID} ({HUB_CONFIG}) through HF datasets ({err}); IWSLT2017 needs the network "
            "the first time (later runs reuse HF's cache); use translation.corpus=multi30k offline"
        ) from None
    return normalize(raw)
