"""What a piece of code executes, read from its imports: the files an edit to which must re-run it. Read by the
pipeline's writer (a stage's code dependencies, ``pelab.pipeline.write``) and by the kept runs (what a run was trained
from, ``pelab.runner.kept_runs``); it imports neither.

Imports are followed at module level and inside functions, never under ``if TYPE_CHECKING``, with three cuts that
follow meaning:

* a task's scoring (its package's ``evaluate.py``: evaluation, the probe's rows, the captures, the fine-tunes of
  finished runs) is imported by name through ``pelab.tasks.scoring`` (``SCORING_REGISTRY``), which the closure
  follows to the stage's task's evaluate module for the stages that score runs only: so editing it never retrains;
  a task's ``paired_records`` and ``statement`` (statistics across its runs, what it says in the report) only for
  the aggregate stage (``aggregation``, ``AGGREGATION_METHODS``), so editing them never re-scores a run;
* the scheme registry (``positional/registry.py``) imports every scheme's module by the name ``schemes.yaml`` gives it
  (no import statement names one) and builds only the stage's scheme: the closure follows the stage's scheme's module
  (and ``none``'s, the cross-attention scheme of encoder-decoders), every scheme's for a stage of any scheme (None),
  and none for a stage that builds no scheme (``NO_SCHEME``: prepare). ``schemes.yaml`` itself is never a file of
  the closure: a stage depends on its scheme's entry, and a kept run hashes it (``registry.SchemeSpec``);
* likewise the task registry (``tasks/__init__.py``) finds every task package by convention and imports it by name:
  only the stage's task's package is followed (every one's for a stage of any task), the length study's problem
  registry (``tasks/length/data/problems/__init__.py``) only the stage's task's problem module, and the switches'
  (``model/switches/__init__.py``) only the switches the stage's scheme names.

A stage without a task or scheme (check, aggregate, report) may reach any of them. (The length study's stages run
every scheme of a list: they follow none, ``NO_SCHEME``, and read the check stage's record of the listed schemes and
problems instead: ``pelab.runner.scheme_records``.)
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent  # src/pelab
SRC = PACKAGE.parent
ROOT = SRC.parent  # the repository: stages/ and src/
# a task's statistics across runs and what it says of itself in the report: only stages without a task run them
AGGREGATION_METHODS = ("paired_records", "statement")
# ``closure``'s scheme for a stage that builds none (prepare), or whose schemes a record covers: none is followed
NO_SCHEME = ""
REGISTRY = PACKAGE / "positional/registry.py"
TASK_REGISTRY = PACKAGE / "tasks/__init__.py"
PROBLEM_REGISTRY = PACKAGE / "tasks/length/data/problems/__init__.py"
SWITCH_REGISTRY = PACKAGE / "model/switches/__init__.py"
SCORING_REGISTRY = PACKAGE / "tasks/scoring.py"


def module_file(name: str) -> Path | None:
    """src/pelab/a/b.py or src/pelab/a/b/__init__.py for ``pelab.a.b``; stages/_common.py for ``_common``."""
    return _module_file(name, SRC, ROOT)


@cache  # the pipeline's writer asks about 670,000 times for some 200 names (each a file system stat or two)
def _module_file(name: str, src: Path, root: Path) -> Path | None:
    if name == "_common":
        return root / "stages/_common.py"
    base = src / Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


@cache
def imports(path: Path, aggregation: bool = False) -> frozenset[str]:
    """The pelab modules ``path`` imports (and ``_common``), with their parent packages."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        type_checking = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        aggregate_method = isinstance(node, ast.FunctionDef) and node.name in AGGREGATION_METHODS and not aggregation
        if type_checking or aggregate_method:
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
    return frozenset(name for name in found if module_file(name) is not None)


def training_source(path: Path) -> bytes:
    """What training executes of a module: its text less its module docstring, or, where it defines one of a task's
    aggregation methods (``AGGREGATION_METHODS``), its code less those methods, its docstrings, comments and layout
    (``ast.unparse``). What a kept run's fingerprint hashes (``runner.kept_runs``), so that rewording a docstring or
    editing a task's statistics across runs never retrains its runs (DVC still re-runs the stage whose file
    changed)."""
    text = path.read_text()
    if not any(f"def {name}(" in text for name in SKIPPED_IN_TRAINING):
        return _without_docstring(text).encode()  # most modules: not parsed (a stage's fingerprint reads some 40)
    return _training_source(text)


def _without_docstring(text: str) -> str:
    """``text`` less its module docstring (a length problem's statement, which the report prints): found by its
    quotes at the very start, as pelab's modules write it; a text that starts otherwise is returned whole."""
    quote = text[:3]
    if quote not in ('"""', "'''"):
        return text
    end = text.find(quote, 3)
    return text if end < 0 else text[end + 3:]


SKIPPED_IN_TRAINING = AGGREGATION_METHODS


@cache  # tests ask for many (task, scheme) pairs' fingerprints in one process
def _training_source(text: str) -> bytes:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = [n for n in node.body if not (isinstance(n, ast.FunctionDef) and n.name in SKIPPED_IN_TRAINING)]
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        node.body = body or [ast.Pass()]
    return ast.unparse(tree).encode()


def _specs(scheme: str | None) -> list:
    """The specs a stage of ``scheme`` builds: its own and ``none``'s (module docstring); every one's for None."""
    from pelab.positional.registry import SCHEMES, scheme_spec

    if scheme == NO_SCHEME:
        return []
    if scheme is None:
        return list(SCHEMES.values())
    try:
        return [scheme_spec(scheme), SCHEMES["none"]]
    except ValueError:  # a name no registry holds: the check stage says so
        return []


def scheme_modules(scheme: str | None) -> set[str]:
    """The modules the registry imports by name for a stage of ``scheme`` (module docstring)."""
    return {spec.module for spec in _specs(scheme)}


def switch_modules(scheme: str | None) -> set[str]:
    """The switch modules ``pelab.model.switches`` imports by name for a stage of ``scheme``: its switches' (every
    switch's for None, none for ``NO_SCHEME``)."""
    package = ".".join(SWITCH_REGISTRY.relative_to(SRC).parent.parts)
    if scheme is None:
        from pelab.positional.switched import SWITCHES

        return {f"{package}.{name}" for name in SWITCHES}
    return {f"{package}.{name}" for spec in _specs(scheme) for name in spec.switches}


def task_modules(task: str | None) -> set[str]:
    """The task modules the task registry imports by name for a stage of ``task`` (None: every one)."""
    from pelab.tasks import TASKS

    return {TASKS[t].__module__ for t in (TASKS if task is None else [task]) if t in TASKS}


def problem_modules(task: str | None) -> set[str]:
    """The problem modules the length study's registry imports by name for a stage of ``task``: its problem's (the
    module named like it; none for a task without one), every one's for a stage of any task."""
    from pelab.tasks import TASKS

    package = ".".join(PROBLEM_REGISTRY.relative_to(SRC).parent.parts)
    if task is not None:
        problem = getattr(TASKS.get(task), "problem", None)
        return {f"{package}.{problem}"} if problem else set()
    names = [p.stem for p in PROBLEM_REGISTRY.parent.glob("*.py") if p.stem not in ("__init__", "base")]
    return {f"{package}.{name}" for name in names}


def scoring_modules(task: str | None) -> set[str]:
    """The evaluate module ``pelab.tasks.scoring`` imports by name for a stage of ``task`` (every task's for None)."""
    from pelab.tasks import TASKS

    # ``tasks.scoring.scoring_module``'s convention, not imported: this module is in every training closure
    names = TASKS if task is None else [task]
    return {f"{TASKS[t].__module__.rsplit('.', 1)[0]}.evaluate" for t in names if t in TASKS}


def closure(script: Path, task: str | None, scheme: str | None, evaluation: bool,
            aggregation: bool = False) -> set[Path]:
    """Every file ``script`` can execute for ``task`` and ``scheme`` (None: any; ``NO_SCHEME``: it builds none),
    itself included; ``aggregation``: also a task's statistics across runs (the aggregate stage)."""
    todo, seen = [script], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        names = set(imports(path, aggregation))
        if path == REGISTRY:
            names |= scheme_modules(scheme)  # imported by name (importlib), as schemes.yaml says
        elif path == TASK_REGISTRY:
            names |= task_modules(task)  # likewise the task packages (``pelab.tasks``)
        elif path == PROBLEM_REGISTRY:
            names |= problem_modules(task)  # and the length study's problems
        elif path == SWITCH_REGISTRY:
            names |= switch_modules(scheme)  # and the switches, as the stage's scheme names them
        elif path == SCORING_REGISTRY and evaluation:
            names |= scoring_modules(task)  # and the task's scoring, for the stages that score runs
        for name in names:
            found = module_file(name)
            if found is not None:
                todo.append(found)
    return seen
