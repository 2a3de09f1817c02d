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

A claim with an ``against_split`` reads the other side there (a scheme's masked recall beyond N against its own
recall at N: the same seeds, another range). A claim with a ``margin`` says "no worse" (a non-inferiority claim:
Gemma 3's local layers cost no perplexity): it holds where the 95% t-interval of the paired difference stays
within ``margin`` × |the other side's mean| of zero on the claimed side, whatever the seeds' signs. A claim with a ``measure`` is a property of the scheme itself, not a
contrast between runs (RoPE's scores depend on n − m only): one of ``MEASURES``, computed in float64 at a fixed
setting, held where it is at most ``tolerance``.
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
    against: str = ""
    task: str = ""
    split: str = ""
    metric: str = ""
    better: str = ""  # "higher" or "lower"
    reported: str = ""
    floor: bool = False
    margin: float | None = None  # "no worse than": the share of |against's mean| the interval may reach
    measure: str = ""  # a property of the scheme (MEASURES) in place of a contrast
    tolerance: float = 0.0  # a measure's largest value that holds
    against_split: str = ""  # where the other side is read, where not at ``split`` (its own runs at another range)

    @property
    def their_split(self) -> str:
        return self.against_split or self.split


def _rope_relative() -> float:
    from pelab.analysis.invariants import rope_relative_deviation

    return rope_relative_deviation(64, 16)


def _sinusoidal_norm() -> float:
    from pelab.analysis.invariants import sinusoidal_norm_deviation

    return sinusoidal_norm_deviation(512, 64)


def _sinusoidal_shift() -> float:
    from pelab.analysis.shift import shift_errors

    return max(shift_errors(64, 64, 5).values())


# a property claim's measure -> (what it computes, the function): each deterministic, float64, no run needed
MEASURES = {
    "rope_relative": ("the largest spread of ⟨R_m q, R_n k⟩ along n − m = const over the largest abs(score) "
                      "(m, n < 64, head dim 16, 8 random (q, k))", _rope_relative),
    "sinusoidal_norm": ("the largest abs(‖PE(t)‖ − √(d/2)) (t < 512, d = 64)", _sinusoidal_norm),
    "sinusoidal_shift": ("the largest abs(M(φ)·PE(t) − PE(t + φ)), four ways (t < 64, d = 64, φ = 5)",
                         _sinusoidal_shift),
}


@dataclass(frozen=True)
class Verdict:
    status: str
    why: str  # one line: what decided it
    contrast: dict[str, float] | None = None  # summarize() of scheme − against over the paired seeds
    agree: int = 0  # paired seeds on the claimed side
    floor: float | None = None


CONTRAST_KEYS = ("id", "says", "source", "scheme", "against", "task", "split", "metric", "better")
PROPERTY_KEYS = ("id", "says", "source", "scheme", "measure", "tolerance")


def _typed(key: str, value):
    if key == "floor":
        return bool(value)
    if key in ("margin", "tolerance"):
        return float(value)
    return str(value)


def load_claims(path: Path = CLAIMS_FILE) -> list[Claim]:
    """Every record of ``path``; a bad one fails in one line naming it and the valid keys."""
    names = [f.name for f in fields(Claim)]
    claims = []
    for entry in yaml.safe_load(path.read_text()) or []:
        where = f"{path.name}: {entry.get('id', '?')}" if isinstance(entry, dict) else f"{path.name}: {entry!r}"
        required = PROPERTY_KEYS if isinstance(entry, dict) and "measure" in entry else CONTRAST_KEYS
        if not isinstance(entry, dict) or set(entry) - set(names) or set(required) - set(entry):
            raise ValueError(f"{where}: a claim has the keys {', '.join(names)} (required: {', '.join(required)}; "
                             f"a property claim: {', '.join(PROPERTY_KEYS)})")
        if "measure" in entry and entry["measure"] not in MEASURES:
            raise ValueError(f"{where}: measure={entry['measure']!r}; valid choices: {', '.join(MEASURES)}")
        if "measure" not in entry and entry["better"] not in ("higher", "lower"):
            raise ValueError(f"{where}: better={entry['better']!r}; valid choices: higher, lower")
        claims.append(Claim(**{k: _typed(k, v) for k, v in entry.items()}))
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


def judge_property(claim: Claim) -> Verdict:
    """A property claim: its measure against its tolerance (the same at every profile: no run is read)."""
    value = MEASURES[claim.measure][1]()
    status = HELD if value <= claim.tolerance else NOT_HELD
    return Verdict(status, f"{value:.2g} {'≤' if status == HELD else '>'} {claim.tolerance:.0e}, the tolerance",
                   {"mean": value, "ci_low": math.nan, "ci_high": math.nan, "sd": math.nan, "n": 1})


def rows_of(name: str, split: str) -> tuple[str, str]:
    """Where a side of a claim is recorded: (pe, split) of records.csv. An evaluation-time variant
    ``<scheme>+<label>`` (``rope_gate+yarn``, ``rope+crop``: ``analysis.variants``) is its scheme's runs under the
    split with the variant's suffix; any other name (``rope+sink``, a switched scheme, included) is its own."""
    from pelab.analysis.variants import VARIANTS

    base, _, label = name.rpartition("+")
    suffix = next((s for s, known in VARIANTS.items() if known == label), None)
    return (base, split + suffix) if base and suffix else (name, split)


def judge(records: pd.DataFrame, claim: Claim) -> Verdict:
    """The verdict of ``claim`` on ``records`` (the tidy rows of records.csv), paired by seed."""
    if claim.measure:
        return judge_property(claim)
    mine = seed_map(records, claim.task, *rows_of(claim.scheme, claim.split), claim.metric)
    theirs = seed_map(records, claim.task, *rows_of(claim.against, claim.their_split), claim.metric)
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
    if claim.margin is not None:  # no worse than the other side by more than the margin
        allowed = claim.margin * abs(mean_theirs)
        within = not math.isnan(low) and min(low, high) > -allowed
        if not within:
            return Verdict(NOT_HELD, f"the interval reaches past the margin −{allowed:.3g} "
                           f"({claim.margin:.0%} of `{claim.against}`'s mean)", contrast, agree, floor)
        return Verdict(HELD, f"the interval within the margin −{allowed:.3g} ({claim.margin:.0%} of "
                       f"`{claim.against}`'s mean) on {len(seeds)} paired seeds", contrast, agree, floor)
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
