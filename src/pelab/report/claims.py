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


def claims_table(records: pd.DataFrame, claims: list[Claim] | None = None,
                 found: list[tuple[Claim, Verdict]] | None = None) -> str:
    """The claims table: each claim, where it is read, the measured contrast beside what the source reports, and
    its verdict with what decided it (``found``: the verdicts, judged already)."""
    rows = []
    for claim, verdict in verdicts(records, claims) if found is None else found:
        if claim.measure:  # a property of the scheme itself
            contrast, where = f"`{claim.scheme}` (a property)", f"{MEASURES[claim.measure][0]}, float64"
            measured = "–" if verdict.contrast is None else f"{verdict.contrast['mean']:.2g}"
        else:
            said = (f"{claim.better} is the claim" if claim.margin is None
                    else f"no worse: {claim.better} is better, margin {claim.margin:.0%}")
            contrast = f"`{claim.scheme}` − `{claim.against}`"
            split = claim.split if claim.their_split == claim.split else f"{claim.split} against {claim.their_split}"
            where = f"`{claim.task}` {split} {claim.metric} ({said})"
            measured = _contrast(verdict)
        rows.append([f"**{claim.id}**: {claim.says} ({claim.source})", contrast, where, measured,
                     claim.reported or "–", f"**{verdict.status}**: {verdict.why}"])
    return markdown_table(["claim", "contrast", "read at", "measured (mean [95% CI] over seeds)", "source reports",
                           "verdict"], rows)


def not_run(found: list[tuple[Claim, Verdict]]) -> str:
    """The claims this profile did not run, one line: each id and what it would need."""
    if not found:
        return ""
    names = "; ".join(f"**{claim.id}** ({verdict.why.removeprefix('no runs of ')})" for claim, verdict in found)
    return f"Not run at this profile ({len(found)}; each is one override: `docs/profiles.md`): {names}."


def section(ctx: Any) -> list[str]:
    """The report's opening section: every claim that ran, its verdict at this profile, in a table; the claims it did
    not run, in one line after it."""
    found = verdicts(ctx.records)
    counts = {status: sum(v.status == status for _, v in found) for status in (HELD, NOT_HELD, NO_READING, NOT_RUN)}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    ran = [(c, v) for c, v in found if v.status != NOT_RUN]
    return ["## Claims", "",
            f"Each published claim and reference finding the study can read, as a declared contrast "
            f"(`src/pelab/report/claims.yaml`), judged on the runs of this profile ({ctx.params.profile}): {summary}. "
            "Held: every paired seed agrees in the claimed direction, the 95% t-interval of the paired difference "
            "clears zero, and the winner clears the task's in-context floor where the claim names one. No reading: "
            "both sides at or below the floor (no ranking among models that do not do the task). A claim with a "
            "margin says \"no worse\": its interval must stay within that share of the other side. A property is "
            "measured on the scheme itself. A verdict holds at this profile's size only: `pelab claims` sets the "
            "experiments' verdicts side by side, by size.", "",
            claims_table(ctx.records, found=ran) if ran else "No claim ran at this profile.", "",
            not_run([(c, v) for c, v in found if v.status == NOT_RUN]), ""]
