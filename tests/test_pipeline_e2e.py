"""The real pipeline, end to end: `dvc repro` and `dvc exp run -S ...` on the smoke profile (three schemes,
two seeds, and the length study's smoke tasks with three schemes) in a temporary copy of the repository. Checks
the outputs, and that caching follows meaning:

* touching an evaluation module re-runs that task's run stages, which restore their runs and train nothing, then
  aggregate and report;
* changing one option of `t5` for one task retrains only that task's `t5` runs;
* adding a seed reruns each (task, scheme) stage, which trains only the new seed (main and length study);
* SIGKILL of `dvc repro` during training, then `dvc repro`, trains only the stages not finished before the kill;
* `dvc exp run -S 'pe=[rope,t5]'`-style subsets reuse cached runs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

GIT_ENV = {"GIT_AUTHOR_NAME": "pelab-test", "GIT_AUTHOR_EMAIL": "test@pelab.invalid",
           "GIT_COMMITTER_NAME": "pelab-test", "GIT_COMMITTER_EMAIL": "test@pelab.invalid"}
ENV = {**os.environ, **GIT_ENV, "TQDM_DISABLE": "1"}
# The main study's copy only: what these tests check (caching, restoring, resuming) is the runner's and DVC's, the same for
# every task; translation runs through every stage of the default study (test_default_study_e2e.py, which checks its
# metrics, live curves and attention maps)
SCHEMES, SEEDS, TASKS = ["none", "rope", "t5"], [0, 1], ["copy"]
LENGTH_TASKS, LENGTH_SCHEMES = ["reverse", "addition_causal"], ["none", "fire", "rand_rope"]  # the length study
OVERRIDES = ["profile=smoke", f"tasks=[{','.join(TASKS)}]", f"pe.schemes=[{','.join(SCHEMES)}]",
             f"seeds=[{','.join(map(str, SEEDS))}]",
             f"length_tasks=[{','.join(LENGTH_TASKS)}]", f"length_schemes=[{','.join(LENGTH_SCHEMES)}]",
             "lm_tasks=[]"]  # every length task and the LM study: test_default_study_e2e


def run(cmd: list[str], cwd: Path, timeout_s: float | None = 30 * 60) -> str:
    """``cmd``'s output; fails the test if it exits non-zero, or runs past ``timeout_s`` (then it is killed, so that
    a hang fails its test instead of the whole suite's time limit; None: no limit)."""
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout_s)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


def ran(output: str, kind: str) -> set[str]:
    """Stages of ``kind`` (run, run_length, tune, …; "" for all) that actually ran (not skipped, not restored from
    the run cache), by name (DVC prints a study's stages as pipelines/<study>/<kind>/dvc.yaml:<name>)."""
    lines = [line for line in output.splitlines() if line.startswith("Running stage '")]
    names = {line.split("'")[1].rsplit(":", 1)[-1] for line in lines}
    return {name for name in names if not kind or name.startswith(f"{kind}@")}


def trains(tasks=TASKS, schemes=SCHEMES, stage="run") -> set[str]:
    """Run stage names, one per (task, scheme) whose seeds it trains and scores: run@<task>-<scheme> (the main
    study)."""
    return {f"{stage}@{t}-{s}" for t in tasks for s in schemes}


def length_stages(tasks=LENGTH_TASKS) -> set[str]:
    """The length study's run stages, one per task (every length scheme in it): run_length@<task>."""
    return {f"run_length@{t}" for t in tasks}


def trained(output: str) -> set[str]:
    """"<task> <scheme> seed <k>" of every run a stage trained (not restored from .kept/)."""
    lines = output.splitlines()
    kept = {line.split("note: ", 1)[1].split(" was trained before")[0] for line in lines
            if line.startswith("note: ") and " was trained before from the same inputs; kept" in line}
    return {line.split("trained ", 1)[1].split(":")[0] for line in lines if line.startswith("trained ")} - kept


def edit_params(project: Path, change) -> None:
    path = project / "params.yaml"
    params = yaml.safe_load(path.read_text())
    change(params)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def locked_trains(project: Path, seeds: list[int]) -> set[str]:
    """run@ stages that their dvc.lock records as run with params ``seeds``."""
    lock = project / "pipelines/main/run/dvc.lock"
    if not lock.exists():
        return set()
    try:
        lock_data = yaml.safe_load(lock.read_text())
    except yaml.YAMLError:  # caught mid-write
        return set()
    if not isinstance(lock_data, dict):  # caught mid-write: empty or truncated
        return set()
    return {name for name, entry in lock_data.get("stages", {}).items()
            if name.startswith("run@") and entry.get("params", {}).get("params.yaml", {}).get("seeds") == seeds}


def last_lock_write(project: Path) -> float:
    """When DVC last wrote one of the pipeline's lock files (the root's and each pipelines/<study>/<kind>/'s)."""
    return max(p.stat().st_mtime for p in [project / "dvc.lock", *project.glob("pipelines/*/*/dvc.lock")]
               if p.exists())


def run_stage_running(project: Path) -> bool:
    """Whether a `python stages/run.py` command runs in ``project`` (read from /proc: Linux)."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"stages/run.py" in (proc / "cmdline").read_bytes() and os.readlink(proc / "cwd") == str(project):
                return True
        except OSError:  # gone, or not ours
            continue
    return False


def copy_worktree(repo_root: Path, dest: Path) -> Path:
    """The working tree (tracked and untracked-but-not-ignored files) copied to ``dest``, a fresh git repo with
    one commit."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=repo_root,
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        src = repo_root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    run(["git", "init", "-q"], dest)
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-qm", "copy"], dest)
    return dest


@pytest.fixture(scope="module")
def project(repo_root, tmp_path_factory) -> Path:
    """A copy of the working tree as a fresh git repo, reproduced."""
    dest = copy_worktree(repo_root, tmp_path_factory.mktemp("pelab") / "repo")
    run(["pelab", "compose", *OVERRIDES, "--out", "params.yaml"], dest)
    out = run(["dvc", "repro"], dest)
    assert ran(out, "run") == trains()
    assert ran(out, "run_length") == length_stages()
    assert len(trained(out)) == len(SEEDS) * (len(TASKS) * len(SCHEMES) + len(LENGTH_TASKS) * len(LENGTH_SCHEMES))
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-qm", "smoke results"], dest)
    return dest


def test_repro_writes_metrics_report_and_figures(project):
    assert {p.name for p in (project / "reports/metrics").iterdir()} == set(TASKS + LENGTH_TASKS)
    for scheme in SCHEMES:
        entry = json.loads((project / f"reports/metrics/copy/{scheme}.json").read_text())
        assert set(entry) == {"exact", "exact_long", "token_long"}
        for key, value in entry.items():
            assert 0.0 <= value <= 1.0, (scheme, key, value)
    # the one metrics file, the headline: each claim's verdict, each task's ranking metric per scheme
    (rev,) = json.loads(run(["dvc", "metrics", "show", "--json"], project)).values()
    (headline,) = rev["data"].values()
    assert set(headline["data"]) == {"claims", *TASKS, *LENGTH_TASKS}
    assert set(headline["data"]["copy"]["token_long"]) == set(SCHEMES)
    assert {v["verdict"] for v in headline["data"]["claims"].values()} <= {
        "held", "not held", "no reading", "not run at this profile"}
    rows = run(["dvc", "metrics", "diff", "--all"], project).splitlines()  # a row per headline number
    assert len(rows) >= 1 + len(TASKS) * len(SCHEMES) + len(LENGTH_TASKS) * len(LENGTH_SCHEMES), rows
    summary = (project / "reports/summary.json").read_text()
    assert "NaN" not in summary and json.loads(summary)["copy"]["rope"]["test"]["exact_match"]["sd"] >= 0.0
    # the live curves of every run, and the report's figures, are DVC plots
    live = (project / "dvclive/copy/rope/seed_1/plots/metrics")
    assert {p.name for p in live.iterdir()} == {"loss.tsv", "lr.tsv", "val_loss.tsv"}
    plots = json.loads(run(["dvc", "plots", "show", "--json", "--split"], project))["data"]
    assert any(name.startswith("reports/figures/") and name.endswith(".png") for name in plots)
    assert "dvclive/copy/none/seed_0/plots/metrics/loss.tsv" in plots
    report = (project / "reports/report.md").read_text()
    assert "Profile **smoke**" in report
    for scheme in SCHEMES:
        assert f"`{scheme}`" in report
    figures = list((project / "reports/figures").glob("*.png"))
    assert len(figures) >= 3 and all(f.stat().st_size > 5000 for f in figures)
    for link in [line.split("(")[1].rstrip(")") for line in report.splitlines() if line.startswith("![")]:
        assert (project / "reports" / link).exists(), link
    assert "## Length generalisation" in report and "length_token_accuracy.png" in report
    for task in LENGTH_TASKS:
        assert f"**{task}.**" in report  # its generated reading
    for scheme in LENGTH_SCHEMES:
        entry = json.loads((project / f"reports/metrics/addition_causal/{scheme}.json").read_text())
        assert set(entry) == {"exact", "exact_long", "token_long"}
    records = (project / "reports/records.csv").read_text().splitlines()
    assert records[0].split(",")[:3] == ["task", "pe", "seed"]
    # the per-run probe: every run of a sequence-model task has diagnostics, which the report reads
    probed = {tuple(line.split(",")[:3]) for line in records if ",probe," in line and ",attn_entropy_norm," in line}
    assert probed == {(t, s, str(k)) for t in ["copy", *LENGTH_TASKS] for s in (SCHEMES if t == "copy" else
                                                                               LENGTH_SCHEMES) for k in SEEDS}
    assert "## Why schemes fail beyond their training lengths" in report and "diagnostics_by_length.png" in report
    assert "diagnostics_rope_frequencies.png" in report  # copy's rope and the length study's rand_rope rotate


def test_repro_again_is_a_no_op(project):
    out = run(["dvc", "repro"], project)
    assert "Running stage" not in out


def test_adding_a_scheme_a_spec_or_a_switch_leaves_every_existing_stage_up_to_date(project, tmp_path):
    """docs/extending.md's scheme and switch recipes in a copy of the reproduced project: a module and its line, a
    spec entry, a switch module, then `pelab pipeline`: `dvc status` names no prepare, run or tune stage (only check,
    aggregate and report, which read every scheme); once the two schemes and alibi with the switch (``alibi+half``)
    join the main study's list, it names their run stages besides. (That no kept run's fingerprint and no scheme's
    record changes: tests/test_specs.py.)"""
    copy = tmp_path / "repo"
    shutil.copytree(project, copy, symlinks=True)
    env = {**ENV, "PYTHONPATH": str(copy / "src")}  # the copy's code: its new module, its registry

    def stale() -> set[str]:
        out = subprocess.run(["dvc", "status", "--json"], cwd=copy, env=env, capture_output=True, text=True, check=True)
        return {name.rsplit(":", 1)[-1] for name in json.loads(out.stdout)}

    assert stale() == set()
    (copy / "src/pelab/positional/wobble.py").write_text(
        '"""``wobble``: −|i − j| on every head."""\n\nfrom pelab.positional.base import PositionalEncoding\n\n\n'
        "class WobblePositionalEncoding(PositionalEncoding):\n    def bias(self, q_pos, k_pos):\n"
        "        return -(q_pos[:, None] - k_pos[None, :]).abs().float()[None].expand(self.n_heads, -1, -1)\n")
    with (copy / "src/pelab/positional/schemes.yaml").open("a") as f:
        f.write("wobble: WobblePositionalEncoding\nrope_half: {of: rope, partial_rotary_factor: 0.5}\n")
    (copy / "src/pelab/model/switches/half.py").write_text(
        '"""``half``: each query\'s logits halved."""\n\nimport torch\n\nfrom pelab.model.switches.base import Switch\n\n'
        'REFERENCE = "a test, https://example.org"\nSAYS = "logits halved"\n\n\nclass Half(Switch):\n'
        "    def query_scale(self, seen, k_len):\n        return torch.full((1, self.n_heads, 1, 1), 0.5)\n\n\n"
        "SWITCH = Half\n")
    subprocess.run(["pelab", "pipeline"], cwd=copy, env=env, check=True, capture_output=True)
    assert stale() <= {"check", "aggregate", "report"}
    schemes = [*SCHEMES, "wobble", "rope_half", "alibi+half"]
    overrides = [o for o in OVERRIDES if not o.startswith("pe.schemes")] + [f"pe.schemes=[{','.join(schemes)}]"]
    subprocess.run(["pelab", "compose", *overrides, "--out", "params.yaml"], cwd=copy, env=env, check=True,
                   capture_output=True)
    assert stale() - {"check", "aggregate", "report"} == trains(schemes=["wobble", "rope_half", "alibi+half"])


def test_editing_evaluation_code_rescores_that_task_and_trains_nothing(project):
    """Copy's and the length study's evaluation code edited at once, one repro (each costs the suite an aggregate and
    a report): copy's run stages and the length stages score again, translation's do not, nothing trains. (That an
    edit to one task's evaluation is no dependency of another study's stages: tests/test_dvc_deps.py.)"""
    for rel in ("src/pelab/tasks/copy/evaluate.py", "src/pelab/tasks/length/evaluate.py"):
        path = project / rel
        path.write_text(path.read_text() + "\n# an edit to evaluation code\n")
    out = run(["dvc", "repro"], project)
    assert ran(out, "run") == trains(tasks=["copy"]) and trained(out) == set()  # every run restored, scored again
    assert ran(out, "run_length") == length_stages()
    assert {"aggregate", "report"} <= ran(out, "") and ran(out, "prepare") == set()


def test_editing_plotting_code_reruns_only_the_report_which_reads_files(project):
    """The report stage depends on files and its own code only (no data, task, model or training code)."""
    path = project / "src/pelab/report/style.py"
    path.write_text(path.read_text() + "\n# an edit to plotting code\n")
    out = run(["dvc", "repro"], project)
    assert ran(out, "") == {"report"}, out
    assert "![attention, rope](figures/attention_rope.png)" in (project / "reports/report.md").read_text()


def test_one_t5_option_of_one_task_retrains_only_those_t5_runs(project):
    """Set as `dvc exp run -S` sets it: recomposed, so the stage's own item carries it (a hand edit that leaves the
    items stale stops at the check stage: below)."""
    run(["pelab", "compose", *OVERRIDES, "copy.positional.t5.num_buckets=40", "--out", "params.yaml"], project)
    out = run(["dvc", "repro"], project)
    assert ran(out, "run") == trains(tasks=["copy"], schemes=["t5"])
    assert trained(out) == {f"copy t5 seed {k}" for k in SEEDS}


def test_adding_a_seed_trains_only_that_seed_and_a_kill_loses_only_the_stage_in_progress(project):
    """The seeds of a (task, scheme) are one stage, so a new seed reruns each (task, scheme) of both studies, which
    restores its finished seeds from .kept/ and trains only the new one. A SIGKILL loses only the stages in
    progress."""
    runs = sorted(project.glob("runs/*/*/seed_0/run.json"))
    before = {path: path.read_text() for path in runs}  # a retrained run would differ at least in its times
    seeds = [*SEEDS, 2]
    edit_params(project, lambda p: p.update(seeds=seeds))
    stacks = trains()
    proc = subprocess.Popen(["dvc", "repro"], cwd=project, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        deadline = time.time() + 300
        # kill inside a stage, never inside DVC's (non-atomic) write of a dvc.lock: wait until the lock records
        # two finished stacks, a run stage's command is running and no lock has been touched for a fifth of a second
        # (a stage takes about a second: time enough that a kill a second later could miss it)
        while time.time() < deadline and proc.poll() is None and not (
                len(locked_trains(project, seeds)) >= 2 and run_stage_running(project)
                and time.time() - last_lock_write(project) > 0.2):
            time.sleep(0.02)
    finally:  # always: a dvc left running would hold the repository's lock for the next test
        os.killpg(proc.pid, signal.SIGKILL)  # dvc and the training stage it is running
        proc.wait()
    finished = locked_trains(project, seeds)
    assert 2 <= len(finished) < len(stacks)
    out = run(["dvc", "repro"], project)
    assert ran(out, "run") == stacks - finished  # only the stages not finished before the kill
    # (the length study's run stages may all have finished before the kill: DVC orders the pipeline files by path)
    assert {t.split(" seed ")[1] for t in trained(out)} == {"2"}  # the new seed only, or the one killed in training
    assert not list(project.glob("runs/*/*/.seed_*"))  # no half-written run left behind
    assert len(runs) == len(TASKS) * len(SCHEMES) + len(LENGTH_TASKS) * len(LENGTH_SCHEMES)
    assert {path: path.read_text() for path in runs} == before  # seed 0 of every stage restored, not retrained
    assert all((path.parent.parent / "seed_2" / "run.json").exists() for path in runs)
    assert json.loads((project / "reports/summary.json").read_text())["copy"]["rope"]["test"]["exact_match"]["n"] == 3


def test_bad_study_input_stops_at_the_check_stage_in_one_line_of_pelab_s(project):
    """What `dvc exp run -S` writes into params.yaml unchecked (DVC composes it with Hydra): a bad list or option
    stops `dvc repro` at the check stage, before any other, with one line naming the value and the choices."""
    path = project / "params.yaml"
    committed = path.read_text()
    cases = [(lambda p: p.update(length_schemes=["none", "rotary"]), "error: unknown positional scheme 'rotary'; "
              "valid choices: none, sinusoidal, "),
             (lambda p: p["pe"].update(schemes=["rope", "rotary"]), "error: unknown positional scheme 'rotary'"),
             (lambda p: p.update(tasks=["copy", "copyy"]), "error: unknown task 'copyy'; valid choices: copy, "),
             (lambda p: p["positional"].setdefault("t5", {}).update(buckets=3), "error: unknown option(s) ['buckets'] "
              "in positional.t5; valid options: max_distance, num_buckets"),
             # a valid option set by hand: the stage's item (what it depends on) would not see it
             (lambda p: p["copy"]["positional"]["t5"].update(num_buckets=44), "error: params.yaml's main_runs no "
              "longer match its lists and options (edited by hand?)")]
    try:
        for change, words in cases:
            edit_params(project, change)
            proc = subprocess.run(["dvc", "repro"], cwd=project, env=ENV, capture_output=True, text=True,
                                  timeout=600)
            out = proc.stdout + proc.stderr
            assert proc.returncode != 0, out
            errors = [line for line in out.splitlines() if line.startswith("error: ")]
            assert len(errors) == 1 and errors[0].startswith(words), out
            assert ran(out, "") == {"check"}, out  # nothing prepared, trained or scored
            path.write_text(committed)
    finally:
        path.write_text(committed)


def test_a_task_listed_in_another_study_s_list_stops_exp_run_at_composition_in_pelab_s_words(project):
    """`-S 'tasks=[reverse]'` would make two stages write data/reverse (the main study's and the length study's),
    which DVC refuses in its own 33 lines when it reads the pipeline, before the check stage: Hydra's composition
    stops it first (conf/config.yaml's `study_lists`, resolved by hydra_plugins/pelab_resolvers.py)."""
    committed = (project / "params.yaml").read_text()
    proc = subprocess.run(["dvc", "exp", "run", "-S", "tasks=[copy,reverse]"], cwd=project, env=ENV,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "task 'reverse' is in tasks but belongs to the length study; list it in length_tasks" in out, out
    assert "specified in" not in out and "Running stage" not in out, out
    assert (project / "params.yaml").read_text() == committed


def test_exp_run_one_scheme_reuses_cached_runs_and_metrics_diff_and_a_task_s_own_list(project):
    """An `exp run` of a subset of schemes restores every run from the cache; then one copy option changed retrains
    only those runs, of the schemes `-S '+main_task_schemes.copy=[t5,none]'` leaves copy (a filter on `pe`: `t5`; no
    stage for `rope`), and `-S '+length_task_schemes.addition_causal=[none,rope]'` (`+`: a key new to params.yaml)
    gives that task a list of its own: `none` restored from .kept/ (not retrained), `rope` (new to it) trained, the
    other task keeping the study's list; the report marks the window and ranks the task that runs every scheme. (One
    `exp run` for both: each costs the suite a report.)"""
    run(["git", "checkout", "--", "."], project)  # back to the committed params and code
    run(["dvc", "checkout", "--force"], project)
    base = ["-S", "profile=smoke", "-S", f"tasks=[{','.join(TASKS)}]", "-S", f"seeds=[{','.join(map(str, SEEDS))}]",
            "-S", "pe=[rope,t5]",
            "-S", f"length_tasks=[{','.join(LENGTH_TASKS)}]", "-S", f"length_schemes=[{','.join(LENGTH_SCHEMES)}]",
            "-S", "lm_tasks=[]"]
    out = run(["dvc", "exp", "run", *base], project)
    assert ran(out, "run") == set() and ran(out, "run_length") == set()  # all run with these params: the run cache
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["pe"]["schemes"] == ["rope", "t5"]  # Hydra merged the two options into a subset
    assert sorted(p.name for p in (project / "reports/metrics/copy").iterdir()) == ["rope.json", "t5.json"]

    out = run(["dvc", "exp", "run", *base, "-S", "copy.train.steps=25", "-S", "+main_task_schemes.copy=[t5,none]",
               "-S", "+length_task_schemes.addition_causal=[none,rope]"], project)
    assert ran(out, "run") == trains(tasks=["copy"], schemes=["t5"])  # copy's own list filters pe: rope's stage gone
    assert trained(out) - {t for t in trained(out) if t.startswith("copy ")} == {f"addition_causal rope seed {k}"
                                                                                   for k in SEEDS}
    diff = run(["dvc", "metrics", "diff", "--all"], project)
    assert "reports/headline.json" in diff and "copy.token_long.t5" in diff and "reports/metrics/" not in diff
    shown = run(["pelab", "experiments", "--all-metrics"], project)  # side by side, narrow: a column each
    steps = next(line for line in shown.splitlines() if line.startswith("| `copy.train.steps` |"))
    assert set(steps.strip("| ").split(" | ")[1:]) == {"20", "25"} and "| copy · token_long · t5 |" in shown
    assert "| claim · positions-copy |" in shown and "main_runs" not in shown
    assert max(map(len, shown.splitlines())) <= 120, shown
    ledger = run(["pelab", "claims"], project)  # the claims across the experiments, by size
    assert "(smoke) | holds from |" in ledger.splitlines()[0] and "| rope-translation |" in ledger
    assert sorted(p.name for p in (project / "reports/metrics/copy").iterdir()) == ["t5.json"]
    assert sorted(p.name for p in (project / "reports/metrics/addition_causal").iterdir()) == ["none.json",
                                                                                               "rope.json"]
    assert len(list((project / "reports/metrics/reverse").iterdir())) == len(LENGTH_SCHEMES)
    report = (project / "reports/report.md").read_text()
    assert "`addition_causal` runs with a list of its own (`none`, `rope`; `length_task_schemes`)" in report
    assert "schemes `rope`, `t5` (`copy` with `t5`; `main_task_schemes`)" in report
    assert "**Ranking across the 1 task run with every scheme**" in report
