"""A study's shards as one job array on a real scheduler (`pelab submit`), and the same shards as SkyPilot tasks.

The dealing is `pelab parallel`'s (``pelab.parallel.shard_overrides``: every study's schemes round-robin, the length
study by task); what differs is where a shard runs and how its finished stages come back.

1. *Prepare once*, in this workspace (`pelab compose OVERRIDES`, then `dvc repro` of the prepare stages), so every
   shard reads the same prepared data from the run cache.
2. *Each shard is an isolated workspace*: a clone of this repository's HEAD under ``FOLDER/shard-<k>/repo`` (on the
   cluster's shared filesystem, beside this workspace), whose DVC cache is this workspace's (``cache.dir``), so the
   run cache is one directory every shard writes and reads. A shard composes its share (the study's overrides with
   its schemes or tasks) and runs `dvc repro` of its run and tune stages; its prepare stages are restored. A shard
   resumes what it finished before: its runs are kept in this workspace's ``.kept/`` (``PELAB_KEPT``), and DVC's
   run cache restores every stage whose command, dependencies and params match, whoever ran it.
3. *One job array* (submitit, https://github.com/facebookincubator/submitit: ``AutoExecutor`` with
   ``cluster="slurm"`` submits ``map_array`` as one Slurm array, ``slurm_array_parallelism`` shards at once; its
   ``"local"`` executor runs the same function in local processes, as the tests do). GPUs per shard come from the
   scheduler's request (``gpus_per_node``), which sets ``CUDA_VISIBLE_DEVICES``: no ``-S device=cuda:i``.
4. *The final run*, once every shard has ended: `dvc repro` of the whole study here restores every stage a shard
   finished and runs what spans the schemes (aggregate, report); a shard that failed leaves its stages to it. A
   resubmit deals the same shards, and each trains only what no shard finished.

Code must match across machines: a shard clones HEAD, so uncommitted edits to the code or the configuration are
refused in one line before anything is submitted (params.yaml and the lock files, which runs rewrite, are not
code). The workspace must sit on a filesystem every node sees (the clones and the cache live there).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pelab.parallel import RAN_STAGE, require_profile, shard_overrides, shard_targets, without_keys
from pelab.studies import STUDIES

CODE = ["src", "stages", "conf", "pyproject.toml", "constraints.txt", ":(glob)**/dvc.yaml"]  # what a shard clones


@dataclass(frozen=True)
class ShardJob:
    """One shard as the scheduler runs it: where its clone lives, what it composes and which stages it runs."""

    index: int
    origin: str  # this workspace (the git repository the shard clones)
    workdir: str  # the shard's own workspace: FOLDER/shard-<k>/repo
    cache_dir: str  # the shared DVC cache (this workspace's)
    kept: str  # this workspace's .kept/
    overrides: tuple[str, ...]  # the study's overrides with the shard's share
    share: tuple[str, ...]  # the shard's own overrides (its schemes or tasks)
    targets: tuple[str, ...]  # its run (and tune) stage groups


@dataclass
class Submission:
    """What `pelab submit` did: each shard's state ("done", or "failed: <last line>") and the stages its final run
    still executed (aggregate and report where every shard finished)."""

    states: dict[int, str] = field(default_factory=dict)
    final_ran: list[str] = field(default_factory=list)


def run_shard(job: ShardJob) -> list[str]:
    """On the node: clone (or reuse) the shard's workspace, point it at the shared cache, compose its share and
    `dvc repro` its stages. Returns the stages it executed (restored ones are not listed)."""
    work = Path(job.workdir)
    if not (work / ".git").exists():
        work.parent.mkdir(parents=True, exist_ok=True)
        _run(["git", "clone", "-q", job.origin, str(work)], work.parent)
    else:  # a resubmit: the same commit as this workspace's HEAD
        head = _run(["git", "rev-parse", "HEAD"], Path(job.origin)).strip()
        _run(["git", "fetch", "-q", job.origin, head], work)
        _run(["git", "checkout", "-q", "--force", head], work)
    _run(["dvc", "config", "--local", "cache.dir", job.cache_dir], work)
    # the clone's own code (the same commit as the workspace's), and the workspace's kept runs
    env = {**os.environ, "PELAB_KEPT": job.kept,
           "PYTHONPATH": os.pathsep.join([str(work / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    _run(["pelab", "compose", *job.overrides, "--out", "params.yaml"], work, env=env)
    return RAN_STAGE.findall(_run(["dvc", "repro", *job.targets], work, env=env))


def plan(overrides: Sequence[str], shards: int, folder: Path, workspace: Path) -> tuple[list[ShardJob], list[str]]:
    """The shard jobs of the study of ``overrides`` dealt over ``shards``, and its prepare stage groups."""
    from pelab.compose import compose_params

    require_profile(overrides)
    composed = compose_params(workspace / "conf", list(overrides))
    cache = _run(["dvc", "cache", "dir"], workspace).strip()
    jobs = []
    for k, shard in enumerate(shard_overrides(composed, shards)):
        mine = without_keys(overrides, {o.split("=", 1)[0] for o in shard})
        jobs.append(ShardJob(k, str(workspace), str(folder / f"shard-{k}" / "repo"), cache,
                             str(workspace / ".kept"), (*mine, *shard), tuple(shard),
                             tuple(shard_targets(shard, composed))))
    return jobs, [s.target("prepare") for s in STUDIES if s.schemes_in(composed)]


def check_committed(workspace: Path) -> None:
    """One line, before anything is submitted, where the code or configuration differs from HEAD (shards clone it)."""
    changed = _run(["git", "status", "--porcelain", "--", *CODE], workspace).splitlines()
    if changed:
        raise ValueError(f"the shards clone HEAD, and {len(changed)} code or config file(s) differ from it "
                         f"({changed[0].strip()}{', …' if len(changed) > 1 else ''}): commit them first")


def submit(overrides: Sequence[str], shards: int, folder: str | Path, *, cluster: str = "slurm",
           workspace: str | Path = ".", slurm: dict[str, Any] | None = None, timeout_min: int = 24 * 60,
           gpus_per_shard: int = 0, cpus_per_shard: int | None = None,
           echo: Callable[[str], None] = print) -> Submission:
    """Prepare here, submit the shards as one job array (``cluster``: "slurm", or "local" for submitit's local
    executor), wait for every shard, then reproduce the whole study here (module docstring)."""
    import submitit

    workspace, folder = Path(workspace).resolve(), Path(folder).resolve()
    check_committed(workspace)
    jobs, prepare = plan(overrides, shards, folder, workspace)
    echo(f"prepare once: pelab compose {' '.join(overrides)}; dvc repro {' '.join(prepare)}")
    _run(["pelab", "compose", *overrides, "--out", "params.yaml"], workspace)
    _run(["dvc", "repro", *prepare], workspace)
    executor = submitit.AutoExecutor(folder=folder / "logs", cluster=cluster)
    executor.update_parameters(name="pelab-shard", timeout_min=timeout_min, tasks_per_node=1, nodes=1,
                               **({"gpus_per_node": gpus_per_shard} if gpus_per_shard else {}),
                               **({"cpus_per_task": cpus_per_shard} if cpus_per_shard else {}))
    if cluster == "slurm":
        executor.update_parameters(slurm_array_parallelism=len(jobs), **(slurm or {}))
    for job in jobs:
        echo(f"shard {job.index}: {' '.join(job.share)} -> {' '.join(job.targets)}")
    submitted = executor.map_array(run_shard, jobs)
    echo(f"submitted {len(submitted)} shard(s) as job {submitted[0].job_id.split('_')[0] if submitted else '-'}")
    result = Submission()
    for job, handle in zip(jobs, submitted):
        try:
            ran = handle.result()
            result.states[job.index] = "done"
            echo(f"shard {job.index} done: it ran {len(ran)} stage(s)")
        except Exception as err:  # noqa: BLE001 - a failed shard leaves its stages to the final run
            last = [line for line in str(err).strip().splitlines() if line.strip()]
            result.states[job.index] = f"failed: {last[-1] if last else type(err).__name__}"
            echo(f"shard {job.index} {result.states[job.index]} (log: {handle.paths.stderr})")
    echo(f"reproduce the whole study here: pelab compose {' '.join(overrides)}; dvc repro")
    _run(["pelab", "compose", *overrides, "--out", "params.yaml"], workspace)
    result.final_ran = RAN_STAGE.findall(_run(["dvc", "repro"], workspace, tee=echo))
    return result


def skypilot_tasks(overrides: Sequence[str], shards: int, out: str | Path, *, workspace: str | Path = ".",
                   accelerators: str | None = None, cloud: str | None = None) -> list[Path]:
    """The same shards as SkyPilot task files (https://docs.skypilot.co/en/latest/reference/yaml-spec.html), one per
    shard, and ``final.yaml``: each shard's setup installs pelab and fetches the shared run cache from the DVC
    remote, its run trains its share (`dvc exp run`) and pushes its stages (`dvc push --run-cache`); the final task
    fetches every shard's and reproduces the whole study. The remote is the repository's default DVC remote, which
    every cloud machine must reach (S3, GCS, SSH...). Returns the files written."""
    import yaml

    workspace, out = Path(workspace).resolve(), Path(out)
    jobs, _ = plan(overrides, shards, out, workspace)
    out.mkdir(parents=True, exist_ok=True)
    resources = {**({"accelerators": accelerators} if accelerators else {}), **({"cloud": cloud} if cloud else {})}
    setup = "pip install -c constraints.txt -e . && dvc fetch --run-cache"
    written = []
    for job in jobs:
        flags = " ".join(f"-S {_quote(o)}" for o in job.overrides)
        task = {"name": f"pelab-shard-{job.index}", "workdir": ".", "resources": resources or {"cpus": "2+"},
                "setup": setup, "run": f"dvc exp run {flags} --pull {' '.join(job.targets)} && dvc push --run-cache"}
        path = out / f"shard-{job.index}.yaml"
        path.write_text(yaml.safe_dump(task, sort_keys=False))
        written.append(path)
    flags = " ".join(f"-S {_quote(o)}" for o in overrides)
    final = {"name": "pelab-final", "workdir": ".", "resources": {"cpus": "2+"}, "setup": setup,
             "run": f"dvc exp run {flags} --pull && dvc push"}
    (out / "final.yaml").write_text(yaml.safe_dump(final, sort_keys=False))
    return [*written, out / "final.yaml"]


SAFE = re.compile(r"^[\w@%+=:,./-]+$")


def _quote(arg: str) -> str:
    return arg if SAFE.match(arg) else "'" + arg.replace("'", "'\\''") + "'"


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None,
         tee: Callable[[str], None] | None = None) -> str:
    """Run ``args`` in ``cwd``; its output (stdout and stderr). A non-zero exit raises with the last line."""
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if tee is not None:
        for line in proc.stdout.splitlines():
            tee(line)
    if proc.returncode != 0:
        last = proc.stdout.strip().splitlines()
        raise ValueError(f"{' '.join(args[:2])} failed (exit {proc.returncode}) in {cwd}: {last[-1] if last else ''}")
    return proc.stdout
