"""The report's opening section: every claim of ``src/pelab/report/claims.yaml`` and its verdict at this profile
(judged by ``pelab.analysis.claims``)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from pelab.analysis.claims import HELD, MEASURES, NO_READING, NOT_HELD, NOT_RUN, Claim, Verdict, verdicts
from pelab.report.tables import markdown_table

__all__ = ["HELD", "NOT_HELD", "NO_READING", "NOT_RUN", "claims_table", "section"]


def _contrast(verdict: Verdict) -> str:
    c = verdict.contrast
    if c is None:
        return "–"
    if math.isnan(c["ci_low"]):
        return f"{c['mean']:+.3f}"
    return f"{c['mean']:+.3f} [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]"


def claims_table(records: pd.DataFrame, claims: list[Claim] | None = None) -> str:
    """The claims table: each claim, where it is read, the measured contrast beside what the source reports, and
    its verdict with what decided it."""
    rows = []
    for claim, verdict in verdicts(records, claims):
        if claim.measure:  # a property of the scheme itself
            contrast, where = f"`{claim.scheme}` (a property)", f"{MEASURES[claim.measure][0]}, float64"
            measured = "–" if verdict.contrast is None else f"{verdict.contrast['mean']:.2g}"
        else:
            said = (f"{claim.better} is the claim" if claim.margin is None
                    else f"no worse: {claim.better} is better, margin {claim.margin:.0%}")
            contrast = f"`{claim.scheme}` − `{claim.against}`"
            where = f"`{claim.task}` {claim.split} {claim.metric} ({said})"
            measured = _contrast(verdict)
        rows.append([f"**{claim.id}**: {claim.says} ({claim.source})", contrast, where, measured,
                     claim.reported or "–", f"**{verdict.status}**: {verdict.why}"])
    return markdown_table(["claim", "contrast", "read at", "measured (mean [95% CI] over seeds)", "source reports",
                           "verdict"], rows)


def section(ctx: Any) -> list[str]:
    """The report's opening section: every claim and its verdict at this profile."""
    found = verdicts(ctx.records)
    counts = {status: sum(v.status == status for _, v in found) for status in (HELD, NOT_HELD, NO_READING, NOT_RUN)}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    return ["## Claims", "",
            f"Each published claim and reference finding the study can read, as a declared contrast "
            f"(`src/pelab/report/claims.yaml`), judged on the runs of this profile ({ctx.params.profile}): {summary}. "
            "Held: every paired seed agrees in the claimed direction, the 95% t-interval of the paired difference "
            "clears zero, and the winner clears the task's in-context floor where the claim names one. No reading: "
            "both sides at or below the floor (no ranking among models that do not do the task). A verdict holds at "
            "this profile's size only.", "", claims_table(ctx.records), ""]
