"""``pelab experiments``: `dvc exp show --json` as one narrow table, an experiment per column (the composed items
left out). The real DVC output is read in tests/test_pipeline_e2e.py."""

from __future__ import annotations

import pytest

from pelab.experiments import ledger, read, starts_to_hold, table


def entry(name, rev, params, metrics, experiments=None):
    return {"rev": rev, "name": name, "error": None, "experiments": experiments,
            "data": {"rev": rev, "params": {"params.yaml": {"data": params}},
                     "metrics": {f: {"data": d} for f, d in metrics.items()}, "deps": {}, "outs": {}}}


def headline(copy: dict, claims: dict | None = None) -> dict:
    return {"reports/headline.json": {"claims": claims or {}, "copy": {"token_long": copy}},
            "reports/metrics/copy/rope.json": {"exact": 0.1}}  # no longer a metrics file: never read


def test_each_experiment_is_a_column_and_only_what_differs_is_a_row():
    base = {"pe": {"schemes": ["rope"]}, "copy": {"train": {"steps": 20, "lr": 1e-3}},
            "main_runs": {"copy-rope": {"task": "copy", "scheme": "rope"}}}
    changed = {**base, "copy": {"train": {"steps": 25, "lr": 1e-3}},
               "main_runs": {"copy-rope": {"task": "copy", "scheme": "rope", "options": {"base": 10}}}}
    held = {"alibi-copy": {"verdict": "held", "contrast": 0.301}, "cope": {"verdict": "no reading", "contrast": None}}
    other = {**held, "alibi-copy": {"verdict": "not held", "contrast": -0.02}}
    rows = [entry(None, "workspace", changed, headline({"rope": 0.9, "t5": 0.2}, held)),
            entry("main", "a" * 40, base, headline({"rope": 0.8, "t5": 0.2}, other),
                  [{"revs": [entry("exp-1", "b" * 40, changed, headline({"rope": 0.9, "t5": 0.5}, held))]}])]
    found = read(rows)
    assert [e.name for e in found] == ["workspace", "main", "exp-1"]
    assert found[2].metrics == {("copy", "token_long", "rope"): 0.9, ("copy", "token_long", "t5"): 0.5}
    assert found[1].claims == {"alibi-copy": ("not held", -0.02), "cope": ("no reading", None)}
    assert "main_runs.copy-rope.task" not in found[0].params and found[0].params["copy.train.steps"] == 25
    text = table(found).splitlines()
    assert text[0] == "|  | workspace | main | exp-1 |"
    assert text[2:] == ["| `copy.train.steps` | 25 | 20 | 25 |",
                        "| claim · alibi-copy | held +0.301 | not held -0.02 | held +0.301 |",
                        "| copy · token_long · rope | 0.9 | 0.8 | 0.9 |",
                        "| copy · token_long · t5 | 0.2 | 0.2 | 0.5 |"]
    everything = table(found, all_metrics=True)
    assert "| claim · cope | no reading | no reading | no reading |" in everything
    assert "t5" not in table(found, task="translation") and "claim" not in table(found, task="copy")
    assert table([]).startswith("no experiments")


def test_the_ledger_orders_experiments_by_size_and_says_where_each_claim_starts_to_hold():
    def exp(name, profile, verdicts):
        return entry(name, name * 8, {"profile": profile},
                     {"reports/headline.json": {"claims": {c: {"verdict": v, "contrast": None}
                                                           for c, v in verdicts.items()}}})
    rows = [exp("f", "full", {"a": "held", "b": "held", "c": "not held", "d": "not run at this profile"}),
            exp("q", "quick", {"a": "held", "b": "not held", "c": "held", "d": "not run at this profile"}),
            exp("m", "medium", {"a": "held", "b": "held", "c": "held", "d": "no reading"})]
    text = ledger(read(rows)).splitlines()
    assert text[0] == "| claim | q (quick) | m (medium) | f (full) | holds from |"
    assert text[2:] == ["| a | held | held | held | quick |", "| b | not held | held | held | medium |",
                        "| c | held | held | not held | – |", "| d | not run | no reading | not run | – |"]
    assert starts_to_hold({"quick": ["held"], "medium": ["not run"]}) == "quick"
    assert ledger([]).startswith("no experiment")


def test_by_default_the_experiments_that_ran_are_compared_and_a_list_param_shows_what_each_adds():
    from pelab.experiments import compared

    quick = {"profile": "quick", "lm_schemes": ["sinusoidal", "alibi", "fox"]}
    more = {"profile": "quick", "lm_schemes": ["sinusoidal", "alibi", "fox", "rope", "rope_gate"]}
    ran = headline({"rope": 0.9}, {"gate-lm": {"verdict": "held", "contrast": -0.7}})
    rows = [entry(None, "workspace", more, ran),
            entry("main", "a" * 40, {"profile": "full"}, {},  # the committed params never ran: no headline
                  [{"revs": [entry("exp-2", "c" * 40, more, ran),
                             entry("exp-1", "b" * 40, quick, headline({"rope": 0.9}))]}])]
    found = read(rows)
    assert [e.name for e in compared(found)] == ["exp-2", "exp-1"]  # the workspace is exp-2's, main never ran
    assert [e.name for e in compared(found, ("exp-1", "workspace"))] == ["exp-1", "workspace"]
    with pytest.raises(ValueError, match=r"^unknown experiment 'exp-9'; valid choices: workspace, main, exp-2, exp-1$"):
        compared(found, ("exp-9",))
    text = table(compared(found)).splitlines()
    assert text[2] == "| `lm_schemes` | [sinusoidal,alibi,fox,rope,rope_gate] | −rope,rope_gate |"
    assert "| claim · gate-lm | held -0.7 | – |" in text and max(map(len, text)) <= 120


def test_the_not_run_verdict_is_the_judges():
    from pelab import experiments
    from pelab.analysis import claims

    assert experiments.NOT_RUN == claims.NOT_RUN
