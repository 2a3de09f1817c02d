"""Claims as data (``pelab.analysis.claims``, ``pelab.report.claims``): each record names a registered scheme, task
and split, and the report judges it on the runs: held, not held, no reading (both at or below the floor) or not
run, paired by seed."""

from __future__ import annotations

import pandas as pd
import pytest

from pelab.positional import check_scheme
from pelab.analysis.claims import HELD, NO_READING, NOT_HELD, NOT_RUN, Claim, judge, load_claims
from pelab.report.claims import claims_table
from pelab.tasks import get_task


# registered schemes with no claim of their own, and why: points of an axis that has its claims at both ends
# (rope-small-base-lm, rope-base-bounds-recall, rope-large-base-recall), and a config with no published claim
UNCLAIMED = {"rope_theta100": "a point of the θ axis", "rope_theta1k": "a point of the θ axis",
             "gemma4": "HF Gemma4TextConfig's defaults: no paper states a claim of its positions",
             "gpt_oss": "OpenAI's gpt-oss model card states its layout, not a measured claim of its positions"}


def test_every_claim_names_a_registered_scheme_task_and_headline_split():
    from pelab.analysis.claims import rows_of
    from pelab.positional import scheme_names

    claims = load_claims()
    assert len(claims) >= 12 and len({c.id for c in claims}) == len(claims)
    named = {rows_of(side, "")[0] for c in claims for side in (c.scheme, c.against) if side}
    assert set(scheme_names()) - named == set(UNCLAIMED)  # every scheme with a paper has a claim
    for claim in claims:
        if claim.measure:
            check_scheme(claim.scheme)
            continue
        for side in (claim.scheme, claim.against):
            scheme, split = rows_of(side, claim.split)
            check_scheme(scheme)
            assert (scheme == side) == (split == claim.split), side  # a variant reads its suffixed split
        task = get_task(claim.task)
        assert claim.metric in task.headline.get(claim.split, []) or claim.task == "translation", claim.id
        assert "http" in claim.source or "references/" in claim.source, claim.id  # where it comes from
        assert not claim.floor or task.section == "length", claim.id  # floors are the length problems'
        # the other side's own range (recall's at_N: the test split at n = N, pelab.tasks.length.evaluate)
        assert claim.against_split in ("", *task.headline, *(["at_N"] if task.section == "length" else [])), claim.id


def test_a_bad_claim_is_one_line_naming_it(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text("- {id: x, says: s, source: s, scheme: rope, against: none, task: copy, split: test, "
                    "metric: exact_match, better: sideways}\n")
    with pytest.raises(ValueError, match=r"^claims.yaml: x: better='sideways'; valid choices: higher, lower$"):
        load_claims(path)
    path.write_text("- {id: y, says: s}\n")
    with pytest.raises(ValueError, match=r"^claims.yaml: y: a claim has the keys id, says, .* \(required: "):
        load_claims(path)


def rows(values: dict[str, list[float]], floor: float | None = None, task: str = "count_causal",
         split: str = "beyond") -> pd.DataFrame:
    out = [{"task": task, "pe": pe, "seed": seed, "split": split, "metric": "token_accuracy", "length": "all",
            "value": v} for pe, vs in values.items() for seed, v in enumerate(vs)]
    if floor is not None:
        out += [{"task": task, "pe": pe, "seed": 0, "split": "task", "metric": f"floor_{split}", "length": "all",
                 "value": floor} for pe in values]
    return pd.DataFrame(out)


CLAIM = Claim("c", "cope counts", "src", "cope", "rope", "count_causal", "beyond", "token_accuracy", "higher",
              floor=True)


def test_the_verdicts_follow_the_seeds_the_interval_and_the_floor():
    held = judge(rows({"cope": [0.8, 0.82, 0.79, 0.81, 0.8], "rope": [0.7, 0.71, 0.69, 0.7, 0.72]}, 0.6), CLAIM)
    assert held.status == HELD and held.agree == 5 and held.contrast["mean"] == pytest.approx(0.1)
    one_way = judge(rows({"cope": [0.8, 0.82, 0.79, 0.81, 0.6], "rope": [0.7, 0.71, 0.69, 0.7, 0.72]}, 0.5), CLAIM)
    assert one_way.status == NOT_HELD and "1 of 5 seeds the other way" in one_way.why
    # the review's reading of the quick report: both below the fitted floor, so no ranking between them
    below = judge(rows({"cope": [0.40, 0.41, 0.39, 0.40, 0.41], "rope": [0.36, 0.37, 0.36, 0.35, 0.37]}, 0.636),
                  CLAIM)
    assert below.status == NO_READING and "both at or below the floor 0.636" in below.why
    under = judge(rows({"cope": [0.60, 0.61, 0.59, 0.60, 0.61], "rope": [0.7, 0.7, 0.7, 0.7, 0.7]}, 0.65), CLAIM)
    assert under.status == NOT_HELD and "`cope` at or below the floor" in under.why
    assert judge(rows({"rope": [0.7] * 5}), CLAIM).status == NOT_RUN
    assert judge(rows({"cope": [0.8], "rope": [0.7]}, 0.1), CLAIM).status == NO_READING  # one seed: no interval
    lower = Claim("l", "alibi flat", "src", "alibi", "sinusoidal", "lm", "at_4L", "token_accuracy", "lower")
    ppl = rows({"alibi": [60.0, 61.0, 59.0], "sinusoidal": [90.0, 95.0, 99.0]}, task="lm", split="at_4L")
    assert judge(ppl, lower).status == HELD and judge(ppl, lower).contrast["mean"] == pytest.approx(-34.667, abs=1e-3)


def test_the_claims_table_states_each_contrast_beside_its_verdict():
    table = claims_table(rows({"cope": [0.8, 0.82, 0.79, 0.81, 0.8], "rope": [0.7, 0.71, 0.69, 0.7, 0.72]}, 0.6),
                         [CLAIM])
    assert "`cope` − `rope`" in table and "+0.100 [" in table and "**held**: on 5 of 5 seeds" in table


def test_a_floor_claim_reads_chance_where_the_task_records_no_floor_and_no_reading_without_either():
    """A problem no order-free answer beats (reverse) records chance, not a floor: that is what the winner clears."""
    claim = Claim("r", "rand beats", "src", "rand_sinusoidal", "sinusoidal", "reverse", "beyond", "token_accuracy",
                  "higher", floor=True)
    values = {"rand_sinusoidal": [0.30, 0.31, 0.29, 0.30, 0.31], "sinusoidal": [0.20, 0.21, 0.20, 0.19, 0.21]}
    def with_chance(values, chance):
        return pd.concat([rows(values, task="reverse"), pd.DataFrame([{
            "task": "reverse", "pe": "sinusoidal", "seed": 0, "split": "task", "metric": "chance", "value": chance,
            "length": "all"}])])

    verdict = judge(with_chance(values, 0.25), claim)
    assert verdict.status == HELD and verdict.floor == 0.25 and "above the floor 0.250" in verdict.why
    assert judge(with_chance(values, 0.5), claim).status == NO_READING  # both at or below chance
    assert judge(rows(values, task="reverse"), claim).status == NO_READING  # neither floor nor chance recorded


def test_the_headline_holds_each_claims_verdict_and_each_tasks_ranking_metric():
    """reports/headline.json (``aggregate.headline``): what ``dvc metrics`` reads, a verdict and a contrast per claim
    and each task's ``ranked_by`` metric per scheme, nothing per seed."""
    from pelab.aggregate import headline, summary_table

    records = rows({"cope": [0.8, 0.82, 0.79, 0.81, 0.8], "rope": [0.7, 0.71, 0.69, 0.7, 0.72]}, 0.6)
    records = pd.concat([records, records[records["split"] == "beyond"].assign(metric="exact_match")])
    found = headline(records, summary_table(records))
    assert found["claims"]["cope-counting"] == {"verdict": HELD, "contrast": pytest.approx(0.1)}
    assert found["claims"]["rope-translation"] == {"verdict": NOT_RUN, "contrast": None}
    assert set(found) == {"claims", "count_causal"} and set(found["claims"]) == {c.id for c in load_claims()}
    assert found["count_causal"] == {"token_long": {"cope": pytest.approx(0.804), "rope": pytest.approx(0.704)}}


def test_a_no_worse_claim_holds_within_its_margin_whatever_the_seeds_signs():
    """``margin``: non-inferiority. Seeds both ways are fine; the interval's bad end must stay within margin × |the
    other side's mean|."""
    claim = Claim("n", "local layers cost nothing", "src", "gemma3", "rope", "lm", "at_L", "token_accuracy", "lower",
                  margin=0.02)
    close = rows({"gemma3": [70.2, 69.9, 70.3, 70.1, 69.8], "rope": [70.0, 70.0, 70.1, 70.0, 70.0]}, task="lm",
                 split="at_L")
    held = judge(close, claim)
    assert held.status == HELD and "within the margin −1.4" in held.why and held.agree < 5
    worse = rows({"gemma3": [73.0, 72.5, 73.5, 72.8, 73.1], "rope": [70.0, 70.0, 70.1, 70.0, 70.0]}, task="lm",
                 split="at_L")
    assert judge(worse, claim).status == NOT_HELD and "past the margin" in judge(worse, claim).why


def test_a_property_claim_is_its_measure_against_its_tolerance_at_every_profile(tmp_path):
    """RoPE's relative-only scores, the sinusoidal table's norm and linear shift: measured, not read from runs."""
    from pelab.analysis.claims import MEASURES

    claims = {c.id: c for c in load_claims() if c.measure}
    assert {c.measure for c in claims.values()} == set(MEASURES)
    for claim in claims.values():
        verdict = judge(pd.DataFrame(columns=["task", "pe", "seed", "split", "metric", "length", "value"]), claim)
        assert verdict.status == HELD and verdict.contrast["mean"] <= claim.tolerance, claim.id
    strict = Claim("r", "relative only", "src", "rope", measure="rope_relative", tolerance=0.0)
    assert judge(pd.DataFrame(), strict).status == NOT_HELD  # float64 rounding is above zero: the test can fail
    assert "`rope` (a property)" in claims_table(pd.DataFrame(), [strict])
    path = tmp_path / "claims.yaml"
    path.write_text("- {id: p, says: s, source: s, scheme: rope, measure: wobble, tolerance: 1}\n")
    with pytest.raises(ValueError, match=r"^claims.yaml: p: measure='wobble'; valid choices: rope_relative, "):
        load_claims(path)


def test_the_section_tabulates_the_claims_that_ran_and_lists_the_rest_in_one_line():
    from types import SimpleNamespace

    from pelab.report.claims import section

    records = rows({"cope": [0.8, 0.82, 0.79, 0.81, 0.8], "rope": [0.7, 0.71, 0.69, 0.7, 0.72]}, 0.6)
    text = "\n".join(section(SimpleNamespace(records=records, params=SimpleNamespace(profile="quick"))))
    table = [line for line in text.splitlines() if line.startswith("| **")]
    assert any(line.startswith("| **cope-counting**") for line in table)  # ran: a row
    assert not any(line.startswith("| **kerple-lm**") for line in table)  # not run: named in the line after it
    assert "Not run at this profile (" in text and "**kerple-lm** (`kerple` and `alibi` on `lm`)" in text
    assert "**rope-relative-only**" in table[-1] or any("rope-relative-only" in line for line in table)
