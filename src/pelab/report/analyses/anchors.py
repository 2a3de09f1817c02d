"""Anchors: our copy and translation numbers beside the published ones they reproduce (``report/anchors.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files

import pandas as pd
import yaml

from pelab.analysis.paired import seed_values
from pelab.report.context import ReportContext
from pelab.report.tables import markdown_table
from pelab.stats import format_interval, format_mean_sd, metric_summary


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


def _anchors() -> tuple[Anchor, ...]:
    raw = yaml.safe_load(files("pelab.report").joinpath("anchors.yaml").read_text())
    return tuple(Anchor(**{**a, "source": raw["sources"][a["source"]], "caveat": raw["caveats"][a["caveat"]],
                           "splits": tuple(a["splits"])}) for a in raw["anchors"])


ANCHORS = _anchors()


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
    return ["### Anchors: our numbers beside published ones", "", anchors_table(ctx.records, {
        "context": ctx.copy.data.context, "n_layers": ctx.copy.model.n_layers, "d_model": ctx.copy.model.d_model}), ""]
