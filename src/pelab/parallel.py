"""A study's stages several at a time on one machine, through DVC itself (`pelab parallel`).

The schemes of every study in the composed params are dealt round-robin into ``workers`` shards; each shard is
queued as one experiment (`dvc exp run --queue`, the shard's schemes as `-S` overrides) and `dvc queue start -j
workers` runs them at once, each worker limited to its share of the CPU threads (``OMP_NUM_THREADS``). Every
stage a shard finishes lands in DVC's run cache, which the queue's temporary workspaces share with this one, so
the final `dvc exp run` of the whole study in the workspace restores every training and evaluation stage from it
and runs only what spans the schemes (aggregate, report). Nothing is trained twice: a stage is restored if its
command, dependencies and params match; a shard that failed leaves its stages to the final run, which trains them.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# (the composed params' list of schemes, the override that selects a subset, the override that drops the study)
STUDIES = (
    (lambda p: p["pe"]["schemes"] if p.get("tasks") else [], "pe", "tasks=[]"),
    (lambda p: p.get("length_schemes", []) if p.get("length_tasks") else [], "length_schemes", "length_tasks=[]"),
    (lambda p: p.get("lm_schemes", []) if p.get("lm_tasks") else [], "lm_schemes", "lm_tasks=[]"),
)
RAN_STAGE = re.compile(r"Running stage '([^']+)'")


def shard_overrides(composed: dict[str, Any], workers: int) -> list[list[str]]:
    """The `-S` overrides of each shard: every study's schemes dealt round-robin over ``workers`` shards (one
    rotation through all studies, so the shards' loads even out), a study left out of a shard that holds none of
    its schemes. Shards left empty are dropped."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    shards: list[dict[str, list[str]]] = [{} for _ in range(workers)]
    turn = 0
    for schemes_of, key, _ in STUDIES:
        for scheme in schemes_of(composed):
            shards[turn % workers].setdefault(key, []).append(scheme)
            turn += 1
    return [[f"{key}=[{','.join(shard[key])}]" if key in shard else drop for _, key, drop in STUDIES]
            for shard in shards if shard]


def run_in_parallel(overrides: Sequence[str], workers: int, cwd: str | Path = ".", poll_s: float = 5.0,
                    echo: Callable[[str], None] = print) -> list[str]:
    """Queue the shards, run them ``workers`` at a time, then reproduce the whole study in the workspace; returns
    the stages that final run executed (the ones no shard had finished: aggregate and report when all went well)."""
    from pelab.compose import compose_params

    cwd = Path(cwd)
    composed = compose_params(cwd / "conf", list(overrides))
    shards = shard_overrides(composed, workers)
    tag = time.strftime("%Y%m%d-%H%M%S")
    names = [f"shard-{tag}-{k}" for k in range(len(shards))]
    for name, shard in zip(names, shards):
        echo(f"queue {name}: {' '.join(shard)}")
        keys = {o.split("=", 1)[0] for o in shard}  # the shard's own choice replaces the user's (Hydra refuses twice)
        mine = [o for o in overrides if o.split("=", 1)[0] not in keys]
        _dvc(["exp", "run", "--queue", "-n", name, *_flags([*mine, *shard])], cwd)
    threads = max(1, (os.cpu_count() or 1) // len(shards))
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads))}
    _dvc(["queue", "start", "-j", str(len(shards))], cwd, env)
    status = ""
    try:
        while True:
            status = _dvc(["queue", "status"], cwd)
            if not any(word in status for word in ("Queued", "Running")):
                break
            time.sleep(poll_s)
    finally:
        _dvc(["queue", "stop"], cwd)
    failed = [name for name in names if re.search(rf"{re.escape(name)}\s.*Failed", status)]
    if failed:
        echo(f"note: {', '.join(failed)} failed (`dvc queue logs NAME`); the final run trains what they left")
    echo(f"reproduce the whole study: dvc exp run {' '.join(_flags(overrides))}")
    log = _dvc(["exp", "run", *_flags(overrides)], cwd, tee=echo)
    return RAN_STAGE.findall(log)


def _flags(overrides: Sequence[str]) -> list[str]:
    return [arg for override in overrides for arg in ("-S", override)]


def _dvc(args: list[str], cwd: Path, env: dict[str, str] | None = None,
         tee: Callable[[str], None] | None = None) -> str:
    done = subprocess.run(["dvc", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if tee is not None:
        for line in done.stdout.splitlines():
            tee(line)
    if done.returncode != 0:
        message = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise ValueError(f"dvc {' '.join(args)} failed (exit {done.returncode}): {message[-1] if message else ''}")
    return done.stdout
