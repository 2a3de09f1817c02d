"""`pelab submit` against a real one-node Slurm cluster that this test starts on localhost: Debian's slurm-wlm and
munge (`apt-get install slurm-wlm munge`), as root. Its own marker (`python -m pytest -m slurm`): the default suite
runs the same code through submitit's local executor (tests/test_submit_e2e.py), since CI has no Slurm. Two shards
of the smoke study run as one job array (`sbatch --array`), concurrently, writing one DVC cache; the final run
trains nothing and scores what one `dvc repro` of the same params scores; a shard that fails leaves its stage to
the final run, and the resubmit trains nothing."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from test_pipeline_e2e import copy_worktree, run
from test_submit_e2e import STUDY, scores

from pelab.cluster import submit

pytestmark = [pytest.mark.e2e, pytest.mark.slurm]

CONF = """ClusterName=pelab
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} CPUs={cpus} RealMemory=4000 State=UNKNOWN
PartitionName=pelab Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node Slurm on localhost (slurmctld and slurmd as root, munged as munge), stopped after the module."""
    if not all(shutil.which(b) for b in ("slurmctld", "slurmd", "munged", "sbatch")) or os.geteuid() != 0:
        pytest.skip("needs root and Debian's slurm-wlm and munge (apt-get install slurm-wlm munge)")
    state = tmp_path_factory.mktemp("slurm")
    for d in ("state", "spool"):
        (state / d).mkdir()
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode != 0:
        for d in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
            Path(d).mkdir(parents=True, exist_ok=True)
            shutil.chown(d, "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", "munged", "--force"], check=True)
    for daemon in ("slurmctld", "slurmd"):  # one cluster: this test's
        subprocess.run(["pkill", "-x", daemon], capture_output=True)
    conf = state / "slurm.conf"
    conf.write_text(CONF.format(host=socket.gethostname(), dir=state, cpus=os.cpu_count() or 1))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    daemons = [subprocess.Popen([d, "-D", "-f", str(conf)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for d in ("/usr/sbin/slurmctld", "/usr/sbin/slurmd")]
    deadline = time.time() + 60
    while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True).stdout:
        assert time.time() < deadline, "the one-node Slurm did not come up within 60 s"
        time.sleep(1)
    yield env
    for daemon in daemons:
        daemon.terminate()
        daemon.wait(timeout=30)


def test_a_study_runs_as_one_slurm_job_array_and_a_failed_shard_is_resubmitted(slurm, repo_root, monkeypatch,
                                                                             tmp_path):
    for key, value in slurm.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    origin = copy_worktree(repo_root, tmp_path / "origin")
    result = submit(STUDY, 2, origin / "cluster", cluster="slurm", workspace=origin, timeout_min=20,
                    echo=lambda line: None)
    assert result.states == {0: "done", 1: "done"}
    assert [s.rsplit(":", 1)[-1] for s in result.final_ran] == ["aggregate", "report"]
    script = next((origin / "cluster/logs").glob("*_submission.sh")).read_text()
    assert "#SBATCH --array=0-1%2" in script  # one array, both shards at once
    direct = copy_worktree(origin, tmp_path / "direct")
    run(["pelab", "compose", *STUDY, "--out", "params.yaml"], direct)
    run(["dvc", "repro"], direct)
    assert scores(direct) == scores(origin)

    # another study of the same workspace (two seeds: every run stage new) whose second shard cannot clone
    study = [*STUDY[:-2], "seeds=[0,1]", STUDY[-1]]
    shutil.rmtree(origin / "cluster")
    (origin / "cluster").mkdir()
    (origin / "cluster/shard-1").write_text("not a directory")
    failed = submit(study, 2, origin / "cluster", cluster="slurm", workspace=origin, timeout_min=20,
                    echo=lambda line: None)
    assert failed.states[0] == "done" and failed.states[1].startswith("failed: ")
    ran = {s.rsplit(":", 1)[-1] for s in failed.final_ran}
    assert "run@copy-rope" in ran and "run@copy-none" not in ran  # the failed shard's stage, trained by the final run
    (origin / "cluster/shard-1").unlink()
    again = submit(study, 2, origin / "cluster", cluster="slurm", workspace=origin, timeout_min=20,
                   echo=lambda line: None)
    assert again.states == {0: "done", 1: "done"} and again.final_ran == []


def test_a_shard_cancelled_between_its_stages_leaves_only_the_unfinished_one(slurm, repo_root, monkeypatch,
                                                                              tmp_path):
    """Shard 1 holds two schemes; `scancel` of its array task once its first stage is in its lock (a real kill, mid
    second stage): the final run trains that second stage alone, the first restored from the run cache."""
    import threading

    for key, value in slurm.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    origin = copy_worktree(repo_root, tmp_path / "origin")
    study = [*STUDY[:-1], "pe.schemes=[none,rope,t5,alibi]", "copy.train.steps=400"]  # shard 1: rope and alibi
    lock = origin / "cluster/shard-1/repo/pipelines/main/run/dvc.lock"
    cancelled: list[str] = []

    def cancel_after_the_first_stage():
        deadline = time.time() + 600
        while time.time() < deadline:
            done = [s for s in ("rope", "alibi") if lock.exists() and f"run@copy-{s}:" in lock.read_text()]
            if done:
                task = next(line.split()[0] for line in subprocess.run(
                    ["squeue", "-h", "-r", "-o", "%i"], capture_output=True, text=True).stdout.split("\n")
                    if line.strip().endswith("_1"))
                subprocess.run(["scancel", task], check=True)
                cancelled.extend(done)
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=cancel_after_the_first_stage)
    watcher.start()
    result = submit(study, 2, origin / "cluster", cluster="slurm", workspace=origin, timeout_min=20,
                    echo=lambda line: None)
    watcher.join()
    assert len(cancelled) == 1 and result.states[0] == "done" and result.states[1].startswith("failed: ")
    trained = {s.rsplit(":", 1)[-1] for s in result.final_ran if "run@" in s}
    unfinished = ({"rope", "alibi"} - set(cancelled)).pop()
    assert trained == {f"run@copy-{unfinished}"}  # the cancelled shard's finished stage was restored
