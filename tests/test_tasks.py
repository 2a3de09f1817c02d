"""The Task interface: a new task is one folder, one registry line and its params section, and the one
study runner trains, reloads and evaluates it like the built-in tasks."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import smoke_raw
from tiny_reverse.task import TINY

from pelab import io
from pelab.aggregate import aggregate
from pelab.params import parse_params
from pelab.runner.checkpoint import load_run
from pelab.runner.evaluate import evaluate_run
from pelab.runner.train import train_runs
from pelab.studies import STUDIES
from pelab.tasks import TASKS, get_task, task_names


@pytest.fixture
def reverse_task():
    from tiny_reverse.task import ReverseTask

    TASKS["tiny_reverse"] = ReverseTask
    yield get_task("tiny_reverse")
    TASKS.pop("tiny_reverse")


def test_the_registry_lists_the_built_in_tasks_and_rejects_unknown_ones():
    """Found by convention (every ``pelab/tasks/<package>/task.py`` with its ``TASKS``), by package name."""
    assert task_names()[:3] == ["copy", "addition", "count"] and task_names()[-2:] == ["lm", "translation"]
    with pytest.raises(ValueError, match=r"^unknown task 'sort'; valid choices: copy, addition, count"):
        get_task("sort")


def test_a_tiny_task_runs_through_the_one_runner(reverse_task, tmp_path):
    raw = smoke_raw(tasks=["tiny_reverse"], seeds=[0, 1], pe={"schemes": ["none", "rope"]})
    raw["tiny_reverse"] = {**TINY, "positional": {"none": {}, "rope": {"base": 100.0}}}
    params = parse_params(raw)
    assert params.task("tiny_reverse").options("rope").base == 100.0  # the task's own scheme options
    reverse_task.prepare(params.task("tiny_reverse"), tmp_path / "data")
    for scheme in params.schemes:
        runs = [tmp_path / f"runs/tiny_reverse/{scheme}/seed_{seed}" for seed in params.seeds]
        train_runs(params, "tiny_reverse", scheme, params.seeds, tmp_path / "data", runs, device="cpu",
                   live_dirs=[tmp_path / f"dvclive/{scheme}/seed_{seed}" for seed in params.seeds])
        for seed, run in zip(params.seeds, runs):
            evaluate_run(params, run, tmp_path / "data", tmp_path / f"results/tiny_reverse/{scheme}/seed_{seed}",
                         device="cpu")
    loaded = load_run(tmp_path / "runs/tiny_reverse/rope/seed_1")
    assert (loaded.task, loaded.scheme, loaded.seed) == ("tiny_reverse", "rope", 1)
    assert loaded.model.pe.base == 100.0
    aggregate(params, tmp_path / "runs", tmp_path / "results", tmp_path / "metrics", tmp_path / "summary.json",
              tmp_path / "records.csv", tmp_path / "plots")
    assert sorted(p.name for p in (tmp_path / "metrics/tiny_reverse").iterdir()) == ["none.json", "rope.json"]
    metrics = io.read_json(tmp_path / "metrics/tiny_reverse/rope.json")
    assert set(metrics) == {"exact"} and 0.0 <= metrics["exact"] <= 1.0
    assert (tmp_path / "plots/tiny_reverse_train_loss.csv").exists()
    # the live curve holds the same rows as the run's history
    live = pd.read_csv(tmp_path / "dvclive/rope/seed_1/plots/metrics/loss.tsv", sep="\t")
    history = pd.read_csv(tmp_path / "runs/tiny_reverse/rope/seed_1/history.csv")
    assert live["step"].tolist() == history["step"].tolist() == [3, 6]
    assert live["loss"].tolist() == pytest.approx(history["loss"].tolist())


def test_a_tiny_task_section_is_validated_like_the_others(reverse_task):
    raw = smoke_raw(tasks=["tiny_reverse"])
    raw["tiny_reverse"] = {**TINY, "data": {"length": 3, "n_tarin": 5}}
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['n_tarin'\] in tiny_reverse.data; valid keys: length, "
                                         r"n_test, n_train"):
        parse_params(raw)


def test_live_curves_are_written_row_by_row_in_dvclive_s_layout_and_a_new_run_starts_them_afresh(tmp_path):
    """``dvc plots`` reads <dir>/plots/metrics/<name>.tsv: a header ``step<TAB><name>``, then one row per logged
    step, appended as it is logged (a row without a value leaves that curve out). A run that starts again (not
    one restored from .kept/) starts its curves empty."""
    from pelab.runner.live import live_logger

    metrics = tmp_path / "live" / "plots" / "metrics"
    with live_logger(tmp_path / "live") as log:
        log({"step": 5, "loss": 2.0, "val_loss": None})
        assert (metrics / "loss.tsv").read_text() == "step\tloss\n5\t2.0\n"  # there while the run goes on
        log({"step": 10, "loss": 1.5, "val_loss": 1.25})
    live = pd.read_csv(metrics / "loss.tsv", sep="\t")
    assert live["step"].tolist() == [5, 10] and live["loss"].tolist() == [2.0, 1.5]
    assert (metrics / "val_loss.tsv").read_text() == "step\tval_loss\n10\t1.25\n"
    with live_logger(tmp_path / "live") as log:
        log({"step": 3, "loss": 0.1})
    assert sorted(p.name for p in metrics.iterdir()) == ["loss.tsv"]
    assert (metrics / "loss.tsv").read_text() == "step\tloss\n3\t0.1\n"
    with live_logger(None) as log:
        assert log is None


def test_the_registries_conf_and_dvc_yaml_agree(repo_root):
    """Every registered task is in the full study and reads a params section that exists; every registered scheme
    is in the full study with a config group if the main study can use it, and params hold options only where they
    say something; every code path dvc.yaml names exists."""
    from test_dvc_deps import STAGES

    from pelab.compose import compose_params
    from pelab.positional import scheme_names

    full = compose_params(repo_root / "conf")
    assert sorted(t for s in STUDIES for t in s.values(full, s.tasks_key)) == sorted(task_names())
    for name in task_names():
        section = full[get_task(name).params_section]
        assert {"data", "model", "train", "eval"} <= set(section), name
    # no placeholders: an entry only where it sets an option (each stage reads its composed item)
    for block in (full["positional"], *(full[s].get("positional") or {} for s in ("copy", "translation", "length", "lm"))):
        assert set(block) <= set(scheme_names()) and all(block.values())
    # xpos and mamba, causal only, are left out of the full length study, whose tasks are bidirectional too; they,
    # HoPE, FoPE and the switched ropes run in the LM
    lm_only = {"xpos", "hope", "fope", "rope_ssmax", "rope_sink", "rope_gate", "mamba"}
    assert set(scheme_names()) - set(full["pe"]["schemes"]) - set(full["length_schemes"]) == lm_only
    assert lm_only <= set(full["lm_schemes"])
    for scheme in full["pe"]["schemes"]:  # `-S pe=<scheme>` (the length study lists its schemes instead)
        assert (repo_root / "conf" / "pe" / f"{scheme}.yaml").exists(), scheme
    code = {dep for _, stage, _ in STAGES for dep in stage.get("deps", []) if dep.startswith(("src/", "stages/"))}
    assert code and not [dep for dep in code if not (repo_root / dep).exists()]


def test_a_stage_refuses_a_scheme_outside_its_study_s_list_in_one_line(repo_root, tmp_path):
    """`stages/run.py --scheme` picks among the study's schemes: one outside the list would train without the options
    params give it (the length study's `fire` threshold, say)."""
    import subprocess
    import sys

    import yaml

    from pelab.compose import compose_params

    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(compose_params(repo_root / "conf", ["profile=smoke", "device=cpu"])))
    proc = subprocess.run([sys.executable, "stages/run.py", "--params", str(params), "--task", "reverse", "--scheme",
                           "t5", "--data", str(tmp_path), "--runs", str(tmp_path / "runs")], cwd=repo_root,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and not (tmp_path / "runs").exists()
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: scheme 't5' is not in the reverse study's list; valid choices: none, rope, fire, rand_rope")
