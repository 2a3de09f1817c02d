"""A study's stages several at a time on one machine, through DVC itself (`pelab parallel`).

1. The prepare stages run once, in the workspace (`dvc exp run OVERRIDES prepare …`), so that every shard trains
   from the same prepared data.
2. The schemes of every study in the composed params (the tasks of a study that runs one stage per task, the
   length study) are dealt round-robin into ``workers`` shards; each shard is queued as one experiment that trains
   and scores its share (`dvc exp run --queue`, the shard's schemes or tasks as `-S` overrides, its run and tune
   stages as targets), and `dvc queue start -j workers` runs them at once, each
   worker limited to its share of the CPU threads (``OMP_NUM_THREADS``).
3. Every stage a shard finishes lands in DVC's run cache, which the queue's temporary workspaces share with this
   one, so the final `dvc exp run OVERRIDES` of the whole study restores each run and tune stage from it and runs
   what spans the schemes: aggregate and report. A stage is restored only if its command, dependencies and params
   match; a shard that failed leaves its stages to the final run, which trains them. The shards keep their runs in
   this workspace's ``.kept/`` (``PELAB_KEPT``), so a shard trains only what was never trained from its inputs.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pelab.studies import STUDIES, StudyRecord


RAN_STAGE = re.compile(r"Running stage '([^']+)'")
DONE = ("Success", "Failed")
STALL_S = 30.0  # how long experiments wait with no worker alive before the workers are started again
WORKERS = re.compile(r"Worker status: (\d+) active, (\d+) idle")  # the last line of `dvc queue status`


def shard_overrides(composed: dict[str, Any], workers: int) -> list[list[str]]:
    """The `-S` overrides of each shard: every study's schemes dealt round-robin over ``workers`` shards (one
    rotation through all studies, so the shards' loads even out), a study left out of a shard that holds none of
    its schemes. A study with one stage per task (``StudyRecord.per_scheme`` False) is dealt by task instead, so a
    shard's stage is the whole study's (the same params) and the final run restores it. Shards left empty are
    dropped."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    shards: list[dict[str, list[str]]] = [{} for _ in range(workers)]
    turn = 0
    for study in STUDIES:
        for item in dealt(study, composed):
            shards[turn % workers].setdefault(deal_key(study), []).append(item)
            turn += 1
    out = []
    for shard in (shard for shard in shards if shard):
        overrides = []
        for s in STUDIES:
            key, tuned = deal_key(s), s.values(composed, s.tune_key)
            if key in shard:
                overrides.append(f"{key}=[{','.join(shard[key])}]")
                if not s.per_scheme and tuned:  # its tuned tasks: those of the shard
                    overrides.append(f"{s.tune_key}=[{','.join(t for t in tuned if t in shard[key])}]")
            else:  # a study left out is tuned nowhere either
                overrides += [f"{s.tasks_key}=[]", *([f"{s.tune_key}=[]"] if tuned else [])]
        out.append(overrides)
    return out


def deal_key(study: StudyRecord) -> str:
    """The override a shard's share of ``study`` is given by: its scheme selection, or its list of tasks."""
    return study.select if study.per_scheme else study.tasks_key


def dealt(study: StudyRecord, composed: dict[str, Any]) -> list[str]:
    """What of ``study`` is dealt to the shards: its schemes, or its tasks (none where it has no scheme)."""
    if study.per_scheme:
        return study.schemes_in(composed)
    return study.values(composed, study.tasks_key) if study.schemes_in(composed) else []


def shard_targets(shard: Sequence[str], composed: dict[str, Any] | None = None) -> list[str]:
    """The stage groups a shard runs (with the prepare stages upstream): its studies' run stages and, where
    ``composed`` tunes a study (and the shard does not leave out its tuned tasks), its tune stages."""
    mine = [s for s in STUDIES if any(o.startswith(f"{deal_key(s)}=[") and o != f"{deal_key(s)}=[]" for o in shard)]
    tuned = [s for s in mine if composed and s.values(composed, s.tune_key) and f"{s.tune_key}=[]" not in shard]
    return [s.target("run") for s in mine] + [s.target("tune") for s in tuned]


def without_keys(overrides: Sequence[str], keys: set[str]) -> list[str]:
    """``overrides`` less those that set one of ``keys`` or a value below it (`pe.schemes=…` is below `pe`), which
    would otherwise win over the shard's own choice (Hydra applies value overrides after group choices)."""
    def key(override: str) -> str:
        return override.split("=", 1)[0].lstrip("+~")

    return [o for o in overrides if not any(key(o) == k or key(o).startswith(f"{k}.") for k in keys)]


def run_in_parallel(overrides: Sequence[str], workers: int, cwd: str | Path = ".", poll_s: float = 10.0,
                    timeout_min: float = 24 * 60, echo: Callable[[str], None] = print) -> list[str]:
    """Prepare, run the shards ``workers`` at a time, then reproduce the whole study in the workspace; returns the
    stages that final run executed (aggregate and report when every shard finished). Waiting for the shards past
    ``timeout_min`` minutes stops the queue with ``--kill`` and raises."""
    from pelab.compose import compose_params

    require_profile(overrides)
    cwd = Path(cwd)
    composed = compose_params(cwd / "conf", list(overrides))
    shards = shard_overrides(composed, workers)
    prepare = [s.target("prepare") for s in STUDIES if s.schemes_in(composed)]
    echo(f"prepare once: dvc exp run {' '.join(_flags(overrides))} {' '.join(prepare)}")
    _dvc(["exp", "run", *_flags(overrides), *prepare], cwd, tee=echo)

    tag = time.strftime("%Y%m%d-%H%M%S")
    names = [f"shard-{tag}-{k}" for k in range(len(shards))]
    for name, shard in zip(names, shards):
        echo(f"queue {name}: {' '.join(shard)}")
        mine = without_keys(overrides, {o.split("=", 1)[0] for o in shard})
        _dvc(["exp", "run", "--queue", "-n", name, *_flags([*mine, *shard]), *shard_targets(shard, composed)],
             cwd)
    threads = max(1, (os.cpu_count() or 1) // len(shards))
    # the shards' runs are kept in this workspace's .kept/, not in their temporary copies: a shard restores what was
    # trained before (an evaluation-only edit retrains nothing) and this workspace keeps what the shards train
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads)),
           "PELAB_KEPT": os.environ.get("PELAB_KEPT", str((cwd / ".kept").resolve()))}
    status = run_queue(names, cwd, len(shards), poll_s, timeout_min, env=env, echo=echo)
    failed = [name for name in names if status[name] == "Failed"]
    if failed:
        echo(f"note: {', '.join(failed)} failed (`dvc queue logs NAME`); the final run trains what they left")
    echo(f"reproduce the whole study: dvc exp run {' '.join(_flags(overrides))}")
    return RAN_STAGE.findall(_dvc(["exp", "run", *_flags(overrides)], cwd, tee=echo))


def require_profile(overrides: Sequence[str]) -> None:
    """One line where ``overrides`` name no profile: the shards and the final run could then read different params."""
    if not any(o.startswith("profile=") for o in overrides):
        raise ValueError(f"name the profile among the overrides (e.g. profile=full), got {list(overrides)}: without "
                         "one the shards and the final run could read different params")


def run_queue(names: Sequence[str], cwd: str | Path, workers: int, poll_s: float = 10.0,
              timeout_min: float = 24 * 60, env: dict[str, str] | None = None,
              echo: Callable[[str], None] = print) -> dict[str, str]:
    """Run the queued experiments ``names`` with ``workers`` workers (`dvc queue start -j workers`) and poll `dvc
    queue status` until each shows Success or Failed; their statuses. DVC's workers can exit while tasks are still
    queued (github.com/treeverse/dvc/issues/10562): when one of ``names`` waits with none of them running and no
    worker alive, the workers are started again (`dvc queue start` starts those that do not answer). Past
    ``timeout_min`` minutes the queue is stopped with ``--kill`` and this raises."""
    cwd = Path(cwd)
    deadline = time.time() + 60 * timeout_min
    start = ["queue", "start", "-j", str(workers)]
    finished, stalled_since = False, None
    try:
        _dvc(start, cwd, env=env, timeout_s=300)
        while True:
            try:  # a status that fails or hangs (the queue's lock held long) is asked again at the next poll
                output = _dvc(["queue", "status"], cwd, check=False, timeout_s=120)
            except subprocess.TimeoutExpired:
                output = ""
            status, workers_alive = queue_state(output, names)
            if all(s in DONE for s in status.values()):
                finished = True
                return status
            if time.time() > deadline:
                raise ValueError(f"the queued experiments did not finish within {timeout_min:g} minutes: {status}")
            stalled = workers_alive == 0 and "Queued" in status.values() and "Running" not in status.values()
            if not stalled:
                stalled_since = None
            elif stalled_since is None:
                stalled_since = time.time()
            if stalled_since is not None and time.time() - stalled_since >= STALL_S:
                echo(f"no queue worker alive for {STALL_S:g} s with {sum(s == 'Queued' for s in status.values())} "
                     "experiment(s) queued: dvc queue start again")
                _dvc(start, cwd, env=env, timeout_s=300)
                stalled_since = None
            time.sleep(poll_s)
    finally:
        try:
            _dvc(["queue", "stop", *([] if finished else ["--kill"])], cwd, check=False, timeout_s=120)
        except subprocess.TimeoutExpired:
            echo("note: `dvc queue stop` did not return within 120 s; see `dvc queue status`")


def queue_state(output: str, names: Sequence[str]) -> tuple[dict[str, str], int | None]:
    """From `dvc queue status` output: the status of each of ``names`` ("" if not listed) and the number of
    workers alive, active or idle (None if the output does not say)."""
    lines = output.splitlines()
    status = {name: next((line.split()[-1] for line in lines if name in line.split()), "") for name in names}
    workers = WORKERS.search(output)
    return status, None if workers is None else int(workers[1]) + int(workers[2])


def _flags(overrides: Sequence[str]) -> list[str]:
    return [arg for override in overrides for arg in ("-S", override)]


def _dvc(args: list[str], cwd: Path, env: dict[str, str] | None = None, tee: Callable[[str], None] | None = None,
         check: bool = True, timeout_s: float | None = None) -> str:
    """Run `dvc ARGS`; its output, echoed line by line as it comes when ``tee`` is given. Without ``tee`` the output
    goes through a file, not a pipe: `dvc queue start` leaves workers behind that hold its stdout open for their
    whole life (dvc-task's ``ManagedProcess.spawn``), and reading a pipe would wait for them. Past ``timeout_s``
    seconds (only without ``tee``) the command is killed and ``subprocess.TimeoutExpired`` raised."""
    if tee is None:
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.run(["dvc", *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  text=True, timeout=timeout_s)
            out.seek(0)
            output = out.read()
    else:
        with subprocess.Popen(["dvc", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) as proc:
            lines = []
            for line in proc.stdout:
                lines.append(line)
                tee(line.rstrip("\n"))
        output = "".join(lines)
    if check and proc.returncode != 0:
        last = output.strip().splitlines()
        raise ValueError(f"dvc {' '.join(args)} failed (exit {proc.returncode}): {last[-1] if last else ''}")
    return output
