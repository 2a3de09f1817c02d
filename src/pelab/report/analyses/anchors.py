"""Anchors: our copy and translation numbers beside the published ones they reproduce."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pelab.report.context import ReportContext
from pelab.report.tables import markdown_table, seed_values
from pelab.stats import format_interval, format_mean_sd, metric_summary

COPY_POST = "copy-task post, “Compare Schemes Accuracies” (peluche 2023), mean of 5 runs"

C05_REPORT = "C05 translation report, “Train & Evaluation Results” (best of 3 runs)"


COPY_CAVEAT = (
    "The post trains its own model at context 10 (`7 1 8 2 <copy> _ _ _ _ _`); its notebook counts a "
    "sequence as right only if the whole output row matches, which is our exact match. Ours: context {context}, "
    "{n_layers} layers, d = {d_model}, held-out sequences"
)


CHAR_BLEU_CAVEAT = (
    "The report's “BLEU-4” is NLTK's corpus BLEU on raw strings, i.e. over characters, on a 0–1 scale; ours here "
    "is the same computation (`nltk_char_bleu`, ×100). Same kind of number, but a different corpus (IWSLT2017 "
    "fr→en there), tokenizer and model size (6+6 layers, d = 512 there), so only roughly comparable"
)


WORD_BLEU_CAVEAT = (
    "Not comparable: the published number is character-level NLTK BLEU (0–1); ours is word-level corpus "
    "sacreBLEU (0–100), the standard translation BLEU"
)


LOSS_CAVEAT = ("Different data (IWSLT2017 fr→en), tokenizer and model size: only the order of magnitude is "
               "comparable")

# First evaluation split of each translation corpus (Multi30k, IWSLT2017): the first one with records is used.
TRANSLATION_TEST = ("test_2016_flickr", "test")


@dataclass(frozen=True)
class Anchor:
    task: str
    scheme: str  # our registry key
    quantity: str  # what the source reports
    published: float
    source: str
    caveat: str
    splits: tuple[str, ...]  # our records' split (the first that has records) and metric compared with it
    metric: str
    scale: float = 1.0  # published × scale is on our metric's scale


def _copy(scheme: str, published: float, quantity: str = "accuracy") -> Anchor:
    return Anchor("copy", scheme, quantity, published, COPY_POST, COPY_CAVEAT, ("test",), "exact_match")


def _bleu(scheme: str, published: float) -> tuple[Anchor, Anchor]:
    return (
        Anchor("translation", scheme, "test BLEU-4 vs our character BLEU", published, C05_REPORT, CHAR_BLEU_CAVEAT,
               TRANSLATION_TEST, "nltk_char_bleu_beam", scale=100.0),
        Anchor("translation", scheme, "test BLEU-4 vs our sacreBLEU", published, C05_REPORT, WORD_BLEU_CAVEAT,
               TRANSLATION_TEST, "bleu_beam", scale=100.0),
    )


def _val_loss(scheme: str, published: float) -> Anchor:
    return Anchor("translation", scheme, "validation loss", published, C05_REPORT, LOSS_CAVEAT, ("val",), "loss")


ANCHORS: tuple[Anchor, ...] = (
    _copy("none", 0.08),
    _copy("sinusoidal", 0.997),
    _copy("learned", 0.998),
    _copy("rope", 0.988),
    _copy("alibi_sym", 0.14, "accuracy (symmetric ALiBi)"),
    *_bleu("sinusoidal", 0.3187),
    *_bleu("learned", 0.3717),
    *_bleu("rope", 0.5594),
    _val_loss("sinusoidal", 2.419),
    _val_loss("learned", 2.499),
    _val_loss("rope", 2.304),
)


def ours(records: pd.DataFrame, anchor: Anchor) -> str:
    """Our value for an anchor as 'mean ± sd [95% CI], n', or why there is none."""
    for split in anchor.splits:
        values = seed_values(records, anchor.task, anchor.scheme, split, anchor.metric)
        if values:
            s = metric_summary(values, anchor.metric)
            return f"{format_mean_sd(s)} {format_interval(s)}, n = {s['n']}" + (
                f" ({split})" if anchor.task != "copy" else "")
    return f"not in this run (no `{anchor.task}` `{anchor.metric}` records for `{anchor.scheme}`)"


def anchors_table(records: pd.DataFrame, caveat_values: dict[str, object]) -> str:
    """One row per anchor (task, scheme, quantity, published, ours, note) and the notes below the table:
    each distinct source and caveat once. caveat_values fills the caveat templates (our context, model size)."""
    notes: dict[tuple[str, str], str] = {}
    rows = []
    for a in ANCHORS:
        key = (a.source, a.caveat.format(**caveat_values))
        mark = notes.setdefault(key, "abcdefghijklmnopqrstuvwxyz"[len(notes)])
        published = f"{a.published:g}" + ("" if a.scale == 1 else f" (×{a.scale:g} = {a.published * a.scale:.4g})")
        rows.append([a.task, f"`{a.scheme}`", a.quantity, published, ours(records, a), f"({mark})"])
    header = ["task", "scheme", "published quantity", "published", "ours: mean ± sd [95% CI], n seeds", "note"]
    legend = [f"({mark}) {source}. {caveat}." for (source, caveat), mark in notes.items()]
    return markdown_table(header, rows) + "\n\n" + "\n\n".join(legend)


def section(ctx: ReportContext) -> list[str]:
    if not ctx.has_task("copy"):
        return []
    return [
        "### Anchors: our numbers beside published ones",
        "",
        anchors_table(ctx.records, {"context": ctx.copy.data.context, "n_layers": ctx.copy.model.n_layers,
                                    "d_model": ctx.copy.model.d_model}),
        "",
    ]
