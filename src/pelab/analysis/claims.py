"""Claims as data: every published claim and reference finding the study can read is a record
(``src/pelab/report/claims.yaml``), judged here against the runs, never in prose typed after them: the aggregate
stage writes each verdict into the headline (``dvc metrics``), the report opens with them (``report/claims.py``).

A claim declares a contrast: a scheme against another on one task, split and metric, the direction it says the
scheme wins in, and whether the winner must clear the task's in-context floor. Paired by seed (the same data, batch
order and initial weights), its verdict is

* **held**: every paired seed agrees in the claimed direction, the 95% t-interval of the paired difference clears
  zero, and the winner clears its floor (where the claim has one);
* **not held**: it ran, and one of those fails;
* **no reading**: both sides at or below the floor (no ranking among models that do not do the task), or fewer
  than two paired seeds;
* **not run at this profile**: the task or either scheme has no runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd
import yaml

from pelab.analysis.paired import seed_map
from pelab.stats import summarize

CLAIMS_FILE = Path(__file__).resolve().parent.parent / "report/claims.yaml"  # src/pelab/report/claims.yaml
HELD, NOT_HELD, NO_READING, NOT_RUN = "held", "not held", "no reading", "not run at this profile"


@dataclass(frozen=True)
class Claim:
    id: str
    says: str
    source: str
    scheme: str
    against: str
    task: str
    split: str
    metric: str
    better: str  # "higher" or "lower"
    reported: str = ""
    floor: bool = False


@dataclass(frozen=True)
class Verdict:
    status: str
    why: str  # one line: what decided it
    contrast: dict[str, float] | None = None  # summarize() of scheme − against over the paired seeds
    agree: int = 0  # paired seeds on the claimed side
    floor: float | None = None


def load_claims(path: Path = CLAIMS_FILE) -> list[Claim]:
    """Every record of ``path``; a bad one fails in one line naming it and the valid keys."""
    names = [f.name for f in fields(Claim)]
    required = [name for name in names if name not in ("reported", "floor")]
    claims = []
    for entry in yaml.safe_load(path.read_text()) or []:
        where = f"{path.name}: {entry.get('id', '?')}" if isinstance(entry, dict) else f"{path.name}: {entry!r}"
        if not isinstance(entry, dict) or set(entry) - set(names) or set(required) - set(entry):
            raise ValueError(f"{where}: a claim has the keys {', '.join(names)} (required: {', '.join(required)})")
        if entry["better"] not in ("higher", "lower"):
            raise ValueError(f"{where}: better={entry['better']!r}; valid choices: higher, lower")
        claims.append(Claim(**{k: (bool(v) if k == "floor" else str(v)) for k, v in entry.items()}))
    if len({c.id for c in claims}) != len(claims):
        raise ValueError(f"{path.name}: a claim id appears twice")
    return claims


def _floor(records: pd.DataFrame, claim: Claim) -> float | None:
    """The task's in-context floor at the claim's split (``floor_<split>``), or its chance where the task records no
    floor (a problem no order-free answer beats: chance is its floor); None where it records neither."""
    for metric in (f"floor_{claim.split}", "chance"):
        found = records[(records["task"] == claim.task) & (records["split"] == "task")
                        & (records["metric"] == metric)]["value"]
        if not found.empty:
            return float(found.iloc[0])
    return None


def judge(records: pd.DataFrame, claim: Claim) -> Verdict:
    """The verdict of ``claim`` on ``records`` (the tidy rows of records.csv), paired by seed."""
    mine = seed_map(records, claim.task, claim.scheme, claim.split, claim.metric)
    theirs = seed_map(records, claim.task, claim.against, claim.split, claim.metric)
    if not mine or not theirs:
        missing = [s for s, found in ((claim.scheme, mine), (claim.against, theirs)) if not found]
        return Verdict(NOT_RUN, f"no runs of {' and '.join(f'`{s}`' for s in missing)} on `{claim.task}`")
    seeds = sorted(set(mine) & set(theirs))
    if len(seeds) < 2:
        return Verdict(NO_READING, f"{len(seeds)} paired seed(s): no interval")
    sign = 1.0 if claim.better == "higher" else -1.0
    diffs = [mine[s] - theirs[s] for s in seeds]
    contrast = summarize(diffs)
    agree = sum(sign * d > 0 for d in diffs)
    floor = _floor(records, claim) if claim.floor else None
    if claim.floor and floor is None:
        return Verdict(NO_READING, f"`{claim.task}` records no floor nor chance to clear", contrast, agree)
    mean_mine, mean_theirs = (sum(v[s] for s in seeds) / len(seeds) for v in (mine, theirs))
    if floor is not None and sign * (mean_mine - floor) <= 0 and sign * (mean_theirs - floor) <= 0:
        return Verdict(NO_READING, f"both at or below the floor {floor:.3f}", contrast, agree, floor)
    low, high = sign * contrast["ci_low"], sign * contrast["ci_high"]
    clears = min(low, high) > 0 if not math.isnan(low) else False
    reasons = ([] if agree == len(seeds) else [f"{len(seeds) - agree} of {len(seeds)} seeds the other way or equal"])
    reasons += [] if clears else ["the interval does not clear zero"]
    if floor is not None and sign * (mean_mine - floor) <= 0:
        reasons.append(f"`{claim.scheme}` at or below the floor {floor:.3f}")
    if reasons:
        return Verdict(NOT_HELD, "; ".join(reasons), contrast, agree, floor)
    return Verdict(HELD, f"on {agree} of {len(seeds)} seeds, the interval clear of zero"
                   + (f", above the floor {floor:.3f}" if floor is not None else ""), contrast, agree, floor)


def verdicts(records: pd.DataFrame, claims: list[Claim] | None = None) -> list[tuple[Claim, Verdict]]:
    return [(claim, judge(records, claim)) for claim in (load_claims() if claims is None else claims)]
