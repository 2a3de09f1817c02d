"""`dvc.yaml`'s code dependencies cover what each stage executes, computed from the source: the import closure
of the stage's script, so an edit to any module a stage runs re-runs that stage (a drift fails here).

What a stage executes, read from the imports (module level and inside functions, never ``if TYPE_CHECKING``):

* a task's ``evaluate``, ``probe`` and ``captures`` methods import evaluation code (its evaluate.py, ``pelab.probe``): followed
  for evaluation stages only (training stages must not depend on it: editing evaluation never retrains);
* the scheme registry imports every scheme's module but builds only the stage's scheme: of those modules only
  the stage's scheme's is followed (and ``none``, the cross-attention scheme);
* likewise the task registry imports every task's module: only the stage's task's is followed.

A stage without a task or scheme (aggregate, report) may reach any of them.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
import yaml

from pelab.compose import compose_params
from pelab.positional import scheme_names
from pelab.tasks import TASKS, task_names

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
SCHEME_MODULES = {f"pelab.positional.{name}" for name in scheme_names()}  # a scheme's module is named like it


def task_package(task: str) -> str:
    """``pelab.tasks.<folder>``: the package of a task's class."""
    return ".".join(TASKS[task].__module__.split(".")[:3])


TASK_PACKAGES = {task_package(t) for t in TASKS}
EVALUATION_METHODS = ("evaluate", "probe", "captures")  # a task's methods that only evaluation stages run


def module_file(name: str) -> Path | None:
    """src/pelab/a/b.py or src/pelab/a/b/__init__.py for ``pelab.a.b``; stages/_common.py for ``_common``."""
    if name == "_common":
        return ROOT / "stages/_common.py"
    base = SRC / Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def imports(path: Path, evaluation: bool) -> set[str]:
    """The pelab modules ``path`` imports (and ``_common``), with their parent packages."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        type_checking = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        evaluate_method = isinstance(node, ast.FunctionDef) and node.name in EVALUATION_METHODS and not evaluation
        if type_checking or evaluate_method:
            skip |= {id(n) for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]  # a name may be a submodule
        else:
            continue
        for name in names:
            if name == "_common" or name.startswith("pelab"):
                parts = name.split(".")
                found |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return {name for name in found if module_file(name) is not None}


def closure(script: Path, task: str | None, scheme: str | None, evaluation: bool) -> set[Path]:
    schemes = set(scheme_names()) if scheme is None else {scheme, "none"}
    wanted_schemes = {f"pelab.positional.{s}" for s in schemes}
    tasks = task_names() if task is None else [task]
    wanted_tasks = {task_package(t) for t in tasks}
    todo = [script]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imports(path, evaluation):
            if name in SCHEME_MODULES and name not in wanted_schemes and path.name == "registry.py":
                continue  # the registry lists every scheme; the stage builds only its own
            in_task = next((pkg for pkg in TASK_PACKAGES if name == pkg or name.startswith(pkg + ".")), None)
            if in_task not in (None, *wanted_tasks) and path == SRC / "pelab/tasks/__init__.py":
                continue  # likewise the task registry
            todo.append(module_file(name))
    return seen


def resolved_stages() -> list[tuple[str, dict, dict]]:
    """(name, stage definition with ${item…} filled in, item) for every stage of dvc.yaml at the full profile."""
    params = compose_params(ROOT / "conf", [])
    context = {"tasks": params["tasks"], "pe.schemes": params["pe"]["schemes"], "length_tasks": params["length_tasks"],
               "length_schemes": params["length_schemes"], "lm_tasks": params["lm_tasks"],
               "lm_schemes": params["lm_schemes"], "seeds": params["seeds"],
               **{f"tune.{key}": params["tune"][key] for key in ("tasks", "length_tasks", "lm_tasks")}}
    out = []
    for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        if "foreach" in stage:
            items = [{"": value} for value in context[stage["foreach"].strip("${}")]]
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
                text = text.replace("${item}" if key == "" else f"${{item.{key}}}", str(value))
            out.append((name, yaml.safe_load(text), item))
    return out


STAGES = resolved_stages()


@pytest.mark.parametrize("name,stage,item", STAGES, ids=[f"{n}-{'-'.join(map(str, i.values()))}" for n, _, i in STAGES])
def test_a_stages_code_dependencies_cover_the_import_closure_of_its_script(name, stage, item):
    script = ROOT / stage["cmd"].split()[1]
    task = item.get("task", item.get(""))
    scheme = item.get("scheme")
    evaluation = not name.startswith(("train", "prepare", "tune"))
    deps = [ROOT / d for d in stage.get("deps", [])]
    missing = sorted(str(path.relative_to(ROOT)) for path in closure(script, task, scheme, evaluation)
                     if not any(path == dep or dep in path.parents for dep in deps))
    assert not missing, f"{name} {item}: add to its deps in dvc.yaml: {missing}"


def test_the_closure_sees_a_schemes_base_class_and_leaves_out_other_schemes_and_evaluation():
    found = {str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/train.py", "reverse", "rand_rope", False)}
    assert {"src/pelab/positional/rand_rope.py", "src/pelab/positional/rope.py", "src/pelab/positional/randomized.py",
            "src/pelab/positional/registry.py", "stages/_common.py"} <= found
    assert "src/pelab/positional/fire.py" not in found and "src/pelab/tasks/length/evaluate.py" not in found
    assert "src/pelab/tasks/copy/evaluate.py" in {
        str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/evaluate.py", "copy", "rope", True)}
    assert "src/pelab/tasks/copy/evaluate.py" not in {
        str(p.relative_to(ROOT)) for p in closure(ROOT / "stages/train.py", "copy", "rope", False)}


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
        reached = imports(path, evaluation=True)
        assert not any(name.startswith(("pelab.runner", "pelab.tasks", "pelab.params", "pelab.model",
                                        "pelab.training", "pelab.probe")) for name in reached), (path, reached)


def test_the_kept_runs_fingerprint_is_the_training_stages_closure():
    """What a kept run is trained from (``runner.kept_runs.fingerprint``) covers every module a training or tuning
    stage imports, and no module only evaluation, aggregation or the report imports: an evaluation-only edit never
    retrains a kept seed, and a training edit always does."""
    from pelab.runner.kept_runs import fingerprint_sources

    trained = set()
    for task in task_names():
        for script in ("train.py", "tune.py"):
            trained |= {p for p in closure(ROOT / "stages" / script, task, None, False) if SRC in p.parents}
    covered = set(fingerprint_sources())
    assert sorted(str(p.relative_to(ROOT)) for p in trained - covered) == ["src/pelab/runner/tune.py"]  # the choice
    # of rate is in the run's identity
    evaluation_only = {SRC / "pelab/tasks" / t / "evaluate.py" for t in ("copy", "length", "lm", "translation")}
    assert not evaluation_only & covered and not {p for p in covered if p not in trained}
