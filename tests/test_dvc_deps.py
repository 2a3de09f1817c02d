"""The pipeline files' code dependencies cover what each stage executes, computed from the source: the import
closure of the stage's script (``pelab.closure``: followed into evaluation code for evaluation stages only,
into the stage's own scheme and task only), so an edit to any module a stage runs re-runs that stage. The files are
what `pelab pipeline` writes from the study records (a drift fails here)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import yaml

from pelab.compose import compose_params
from pelab.closure import NO_SCHEME, closure, imports, module_file, problem_modules
from pelab.pipeline.code_records import (code_files, code_record, groups, record_path, recorded_files,
                                        write_code_records)
from pelab.pipeline.write import pipeline_files
from pelab.runner.scheme_records import covered, recorded_modules
from pelab.studies import STAGE_KINDS, STUDIES
from pelab.tasks import task_names

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def test_the_committed_pipeline_files_are_what_pelab_pipeline_writes():
    files = pipeline_files()
    assert set(files) == {"dvc.yaml", *(str(p.relative_to(ROOT)) for p in ROOT.glob("pipelines/**/dvc.yaml"))}
    for rel, text in files.items():
        assert (ROOT / rel).read_text() == text, f"{rel} is stale: run `pelab pipeline`"
        assert text.startswith("# Written by `pelab pipeline`"), rel
    assert [s.pipeline(k) for s in STUDIES for k in STAGE_KINDS] == list(files)[1:]


def resolved_stages() -> list[tuple[str, dict, dict]]:
    """(name, stage definition with ${item…} filled in, item) for every stage of the pipeline files at the full
    profile."""
    params = compose_params(ROOT / "conf", [])
    # every study's lists, read from its record (a new study is picked up here)
    context = {"seeds": params["seeds"],
               **{key: s.values(params, key) for s in STUDIES for key in (s.tasks_key, s.schemes_key, s.tune_key)},
               **{key: params[key] for s in STUDIES for key in (s.runs_key, s.tuned_runs_key) if key}}
    out = []
    stages = {}
    for path in (ROOT / "dvc.yaml", *sorted(ROOT.glob("pipelines/**/dvc.yaml"))):
        stages.update(yaml.safe_load(path.read_text())["stages"])
    for name, stage in stages.items():
        if "foreach" in stage:
            loop = context[stage["foreach"].strip("${}")]  # a list, or a mapping of items ({task, scheme})
            items = [{**v, "key": k} for k, v in loop.items()] if isinstance(loop, dict) else \
                [{"": value} for value in loop]
            body = stage["do"]
        elif "matrix" in stage:
            keys = list(stage["matrix"])
            values = [context[stage["matrix"][k].strip("${}")] for k in keys]
            items = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
            body = {k: v for k, v in stage.items() if k != "matrix"}
        else:
            items, body = [{}], stage
        for item in items:
            text = yaml.safe_dump(body)
            for key, value in item.items():
                text = text.replace("${item}" if key == "" else "${key}" if key == "key" else f"${{item.{key}}}",
                                    str(value))
            out.append((name, yaml.safe_load(text), item))
    return out


STAGES = resolved_stages()


@pytest.mark.parametrize("name,stage,item", STAGES, ids=[f"{n}-{'-'.join(map(str, i.values()))}" for n, _, i in STAGES])
def test_a_stages_code_dependencies_cover_the_import_closure_of_its_script(name, stage, item):
    """A run or tune stage of one (task, scheme) covers the closure for its scheme; one of a task (the length
    study's), running every scheme of a list, the closure of no scheme and the check stage's record of its schemes
    (``runner.scheme_records``, tested below); prepare builds no scheme."""
    script = ROOT / stage["cmd"].split()[1]
    task = item.get("task", item.get(""))
    per_task = "scheme" not in item and script.stem in ("run", "tune")
    schemes = [item["scheme"]] if "scheme" in item else [NO_SCHEME] if per_task or name.startswith("prepare") \
        else [None]
    evaluation = not name.startswith("prepare")  # a run or tune stage scores its runs
    deps = [ROOT / d for d in stage.get("deps", [])]
    code = [d for d in stage.get("deps", []) if d.startswith("reports/code/")]
    if name != "check" and not name.startswith(("aggregate", "report")):  # one record of its code, no code file
        study, kind, _ = code[0].split("/")[2:]
        assert code == [f"reports/code/{study}/{kind}/{task}.json"], name
        assert not any(d.startswith(("src/", "stages/")) for d in stage["deps"]), name
        deps += code_files(next(s for s in STUDIES if s.name == study), kind, task)
    recorded = set()  # what the check stage's record covers: the listed schemes' modules, each task's problem's
    if any(d.parent == ROOT / "reports/schemes" for d in deps):
        recorded = {module_file(m) for m in problem_modules(task)}
    assert per_task <= bool(recorded or any(d.parent == ROOT / "reports/schemes" for d in deps)), name
    if "scheme" in item:  # its own scheme's record (entry, class and switch modules), never schemes.yaml
        assert f"reports/schemes/each/{item['scheme']}.json" in stage["deps"]
        recorded = covered(recorded_modules(item["scheme"]), None)
        assert "src/pelab/positional/schemes.yaml" not in str(stage) and "src/pelab/positional" not in stage["deps"]
        assert not any(d.startswith(("src/pelab/positional/fire.py", "src/pelab/model/switches/ssmax.py"))
                       for d in stage["deps"])  # found by name: in the record, not in dvc.yaml
    missing = sorted({str(path.relative_to(ROOT)) for scheme in schemes
                      for path in closure(script, task, scheme, evaluation) - recorded
                      if not any(path == dep or dep in path.parents for dep in deps)})
    assert not missing, f"{name} {item}: not in its deps (run `pelab pipeline`): {missing}"


def test_the_closure_sees_a_schemes_base_class_and_leaves_out_other_schemes_and_evaluation():
    found = {str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/run.py", "reverse", "rand_rope", False)}
    assert {"src/pelab/positional/rope.py", "src/pelab/positional/randomized.py",
            "src/pelab/positional/registry.py", "stages/_common.py"} <= found
    assert "src/pelab/positional/fire.py" not in found and "src/pelab/tasks/length/evaluate.py" not in found
    layout = {str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/run.py", "lm", "gemma3", False)}
    assert {"src/pelab/positional/layout.py", "src/pelab/positional/rope.py"} <= layout  # a spec's class module
    prepare = {str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/prepare.py", "copy", NO_SCHEME, False)}
    assert not {p for p in prepare if p.endswith(("/rope.py", "/none.py", "/alibi.py", "/layout.py"))}
    assert "src/pelab/tasks/copy/evaluate.py" in {
        str(p.relative_to(ROOT)) for p in closure(ROOT / "src/pelab/runner/evaluate.py", "copy", "rope", True)}
    assert "src/pelab/tasks/copy/evaluate.py" not in {
        str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/run.py", "copy", "rope", False)}
    # one study's evaluation code is no dependency of another study's run stages (the e2e test edits both at once)
    assert "src/pelab/tasks/copy/evaluate.py" not in {
        str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/run.py", "reverse", "rope", True)}
    assert "src/pelab/tasks/length/evaluate.py" not in {
        str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/run.py", "copy", "rope", True)}


def test_the_report_reads_files_only_no_model_task_training_code_and_no_data():
    """The report runs no model: no module under report/ imports the runner, a task or params (whose validation
    runs task code; it reads reports/study.json instead), and its stage depends on neither data/ nor the model,
    task, training or probe code."""
    report = next(stage for name, stage, _ in STAGES if name == "report")
    code = ("src/pelab/runner", "src/pelab/tasks", "src/pelab/model", "src/pelab/training", "src/pelab/probe",
            "src/pelab/params.py")
    assert not any(dep == "data" or dep.startswith(("data/", *code)) for dep in report["deps"])
    assert "--data" not in report["cmd"] and "reports/study.json" in report["deps"]
    for path in sorted((SRC / "pelab/report").rglob("*.py")):
        reached = imports(path)
        assert not any(name.startswith(("pelab.runner", "pelab.tasks", "pelab.params", "pelab.model",
                                        "pelab.training", "pelab.probe")) for name in reached), (path, reached)


def test_the_kept_runs_fingerprint_is_the_training_stages_closure():
    """What a kept run is trained from (``runner.kept_runs.fingerprint_sources``) is the training code's closure
    for its task and scheme (the run and tune stages' closures less their scoring): no evaluation module, no other
    scheme's module."""
    from pelab.positional import scheme_spec
    from pelab.runner.kept_runs import fingerprint_sources

    for task, scheme in (("reverse", "rand_rope"), ("copy", "alibi"), ("lm", "rope"), ("translation", "t5"),
                         ("count_causal", "rope")):
        covered = set(fingerprint_sources(task, scheme))
        trained = closure(SRC / "pelab/runner/train.py", task, scheme, False)
        assert covered == trained - {SRC / "pelab/closure.py"}  # less the closure rule
        assert not {p for p in covered if p.name in ("params.py", "studies.py")}, "validation is not training"
        tuned = closure(SRC / "pelab/runner/tune.py", task, scheme, False) - (trained - covered)
        assert tuned - covered == {SRC / "pelab/runner/tune.py"}  # the choice of rate is in the run's identity
        assert not {p for p in covered if p.name == "evaluate.py" or "probe" in p.parts}, (task, scheme)
        # the fine-tunes of finished runs (their methods, budget, data) never retrain a run; their settings are read
        assert not {p for p in covered if p.name in ("recalibrate.py", "rope_extensions.py")
                    or p == SRC / "pelab/positional/recalibration.py"}, (task, scheme)
        assert SRC / f"pelab/positional/{scheme_spec(scheme).module.rsplit('.', 1)[1]}.py" in covered
        assert SRC / "pelab/positional/fire.py" not in covered
    assert SRC / "pelab/positional/rope.py" in set(fingerprint_sources("reverse", "rand_rope"))  # what it wraps


def test_a_kept_runs_fingerprint_reads_what_training_executes(tmp_path):
    """``closure.training_source``: editing a task's statistics across runs or its report statement (the aggregate
    stage's methods), a docstring or a comment leaves it as it was (no retraining); editing what training runs does
    not. A task's scoring is another module, which no training closure reaches (``tasks.scoring``)."""
    from pelab.closure import training_source

    base = '''"""A task."""
class T:
    """Its class."""
    def batches(self, n):
        return n + 1  # one more

    def paired_records(self, model):
        return model.score()

    def statement(self, cfg):
        return cfg
'''
    variants = {
        "same": base.replace('"""Its class."""', '"""Its class, reworded."""').replace("# one more", "# plus one")
        .replace("return model.score()", "return model.score(k=2)").replace("    def statement(self, cfg):\n"
                                                                           "        return cfg\n", ""),
        "changed": base.replace("return n + 1", "return n + 2"),
    }
    (tmp_path / "base.py").write_text(base)
    for name, text in variants.items():
        (tmp_path / f"{name}.py").write_text(text)
    assert training_source(tmp_path / "same.py") == training_source(tmp_path / "base.py")
    assert training_source(tmp_path / "changed.py") != training_source(tmp_path / "base.py")
    assert b"def batches" in training_source(tmp_path / "base.py")
    assert b"score" not in training_source(tmp_path / "base.py")
    from pelab.tasks import task_names

    for task in task_names():  # scoring reached by name, for the stages that score runs only
        trained = closure(SRC / "pelab/runner/train.py", task, "rope", False)  # what a kept run hashes
        scored = closure(ROOT / "stages/run.py", task, "rope", True)
        assert not [p for p in trained if p.name in ("evaluate.py", "scoring.py")], task
        assert SRC / f"pelab/tasks/{task if (SRC / 'pelab/tasks' / task).is_dir() else 'length'}/evaluate.py" in scored


def test_the_check_stage_depends_on_every_file_a_code_record_covers():
    """The check stage writes the records of the stage groups' code, so it must run when any file they hold
    changes; no record holds ``schemes.yaml`` (adding a scheme changes none) and each names the stage's own task's
    package only."""
    check = next(stage for name, stage, _ in STAGES if name == "check")
    deps = [ROOT / d for d in check["deps"]]
    covered = {ROOT / f for study, kind, task in groups() for f in code_record(study, kind, task)}
    assert not {p for p in covered if not any(p == d or d in p.parents for d in deps)}
    assert {ROOT / r for r in recorded_files()} and "reports/code" in check["outs"]
    assert ROOT / "src/pelab/positional/schemes.yaml" not in covered
    copy = code_record(STUDIES[0], "run", "copy")
    assert "src/pelab/tasks/copy/task.py" in copy and not any("tasks/translation" in f for f in copy)
    assert "src/pelab/training/loop.py" in copy and "stages/run.py" in copy and "stages/tune.py" not in copy
    assert "src/pelab/tasks/copy/evaluate.py" in copy  # run stages score their runs; prepare stages do not
    assert "src/pelab/tasks/copy/evaluate.py" not in code_record(STUDIES[0], "prepare", "copy")


def test_code_records_are_rewritten_only_where_they_differ(tmp_path):
    import hashlib
    import os

    written = write_code_records(tmp_path)
    assert len(written) == len(list(groups())) == len(set(written))
    path = record_path(tmp_path, STUDIES[0], "run", "copy")
    assert path == tmp_path / "main/run/copy.json" and path in written
    record = json.loads(path.read_text())
    assert record == {f: hashlib.sha256((ROOT / f).read_bytes()).hexdigest() for f in record}
    os.utime(path, (0, 0))
    (tmp_path / "main/run/gone.json").write_text("{}")  # a task no longer registered
    write_code_records(tmp_path)
    assert path.stat().st_mtime == 0 and not (tmp_path / "main/run/gone.json").exists()
