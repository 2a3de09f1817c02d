"""``pelab experiments``: `dvc exp show --json` as one narrow table, an experiment per column (the composed items
left out). The real DVC output is read in tests/test_pipeline_e2e.py."""

from __future__ import annotations

from pelab.experiments import read, table


def entry(name, rev, params, metrics, experiments=None):
    return {"rev": rev, "name": name, "error": None, "experiments": experiments,
            "data": {"rev": rev, "params": {"params.yaml": {"data": params}},
                     "metrics": {f: {"data": d} for f, d in metrics.items()}, "deps": {}, "outs": {}}}


def test_each_experiment_is_a_column_and_only_what_differs_is_a_row():
    base = {"pe": {"schemes": ["rope"]}, "copy": {"train": {"steps": 20, "lr": 1e-3}},
            "main_runs": {"copy-rope": {"task": "copy", "scheme": "rope"}}}
    changed = {**base, "copy": {"train": {"steps": 25, "lr": 1e-3}},
               "main_runs": {"copy-rope": {"task": "copy", "scheme": "rope", "options": {"base": 10}}}}
    rows = [entry(None, "workspace", changed, {"reports/metrics/copy/rope.json": {"exact": 0.9, "exact_long": 0.1}}),
            entry("main", "a" * 40, base, {"reports/metrics/copy/rope.json": {"exact": 0.8, "exact_long": 0.1}},
                  [{"revs": [entry("exp-1", "b" * 40, changed,
                                   {"reports/metrics/copy/rope.json": {"exact": 0.9, "exact_long": 0.1},
                                    "reports/metrics/copy/t5.json": {"exact": 0.5}})]}])]
    found = read(rows)
    assert [e.name for e in found] == ["workspace", "main", "exp-1"]
    assert found[2].metrics == {("copy", "rope", "exact"): 0.9, ("copy", "rope", "exact_long"): 0.1,
                                ("copy", "t5", "exact"): 0.5}
    assert "main_runs.copy-rope.task" not in found[0].params and found[0].params["copy.train.steps"] == 25
    text = table(found).splitlines()
    assert text[0] == "|  | workspace | main | exp-1 |"
    assert text[2:] == ["| `copy.train.steps` | 25 | 20 | 25 |", "| copy · rope · exact | 0.9 | 0.8 | 0.9 |",
                        "| copy · t5 · exact | – | – | 0.5 |"]  # lr, exact_long and the composed items are equal
    assert "copy · rope · exact_long | 0.1 | 0.1 | 0.1 |" in table(found, all_metrics=True)
    assert "t5" not in table(found, task="translation")
    assert table([]).startswith("no experiments")
