"""pelab.forkserver: a command handed to a warm server ends as the same script run in its own process would (output,
status, argv, working directory, per-stage environment), a code change gets a server of its own, and a killed or
interrupted command takes its stage with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pelab import forkserver

pytestmark = pytest.mark.skipif(not forkserver.enabled(), reason="the fork server serves on Linux only")

SCRIPT = '''\
from pelab.forkserver import hand_over
hand_over(__name__, __file__)
import json, os, sys, time
import pelab.forkserver
mode = sys.argv[1]
if mode == "sleep":
    open(sys.argv[2], "w").write(str(os.getpid()))
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(7)
if mode == "terminate":
    os.kill(os.getpid(), 15)
if mode == "threads":
    import torch
    torch.set_num_threads(2)
    x = torch.ones(512, 512)
    print(float((x @ x).sum()))
print(json.dumps({"served": pelab.forkserver.served, "argv": sys.argv[1:], "cwd": os.getcwd(),
                  "stage": os.environ.get("DVC_STAGE"), "main": __name__}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[2]) if mode == "status" else 0)
'''


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A stage-like script in a folder of its own, the servers' sockets in another, and a server serving it."""
    root = tmp_path_factory.mktemp("forkserver")
    (root / "app").mkdir()
    (root / "app" / "stage.py").write_text(SCRIPT)
    env = {**os.environ, "PELAB_FORKSERVER_DIR": str(root / "sockets"), "PELAB_FORKSERVER": "1"}
    first = command(root, env, "status", "0")  # no server yet: it starts one and waits for it
    assert first.returncode == 0 and json.loads(first.stdout)["served"], first.stderr
    assert len(list((root / "sockets").glob("*.sock"))) == 1
    yield root, env
    for pid in server_pids(root):
        os.kill(pid, signal.SIGTERM)


def server_pids(root: Path) -> list[int]:
    found = subprocess.run(["pgrep", "-f", f"pelab.forkserver {root}"], capture_output=True, text=True).stdout
    return [int(pid) for pid in found.split()]


def command(root: Path, env: dict[str, str], *args: str, stage: str = "a", **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "app/stage.py", *args], cwd=root, env={**env, "DVC_STAGE": stage},
                          capture_output=True, text=True, timeout=120, **kw)


def test_a_served_command_ends_as_the_script_run_in_its_own_process(app):
    root, env = app
    served = command(root, env, "status", "3", stage="b")
    alone = command(root, {**env, "PELAB_FORKSERVER": "0"}, "status", "3", stage="b")
    assert json.loads(served.stdout) == {"served": True, "argv": ["status", "3"], "cwd": str(root), "stage": "b",
                                         "main": "__main__"}
    assert json.loads(alone.stdout) == {**json.loads(served.stdout), "served": False}
    assert served.returncode == alone.returncode == 3 and served.stderr == alone.stderr == "to stderr\n"


def test_a_served_stage_runs_torch_on_several_threads(app):
    root, env = app
    out = command(root, env, "threads")
    assert out.returncode == 0 and out.stdout.splitlines()[0] == str(512.0 ** 3)
    assert json.loads(out.stdout.splitlines()[1])["served"]


def test_a_stage_killed_by_a_signal_ends_its_command_by_that_signal(app):
    root, env = app
    assert command(root, env, "terminate").returncode == -signal.SIGTERM


def test_killing_the_command_kills_its_stage_and_an_interrupt_reaches_it(app, tmp_path):
    root, env = app
    for how in ("kill", "interrupt"):
        pid_file = tmp_path / f"{how}.pid"
        proc = subprocess.Popen([sys.executable, "app/stage.py", "sleep", str(pid_file)], cwd=root, env=env,
                                stdout=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.time() < deadline:
            time.sleep(0.05)
        stage = int(pid_file.read_text())
        assert stage != proc.pid  # the stage runs in the server's child
        if how == "kill":
            proc.kill()
            proc.wait()
            deadline = time.time() + 10
            while Path(f"/proc/{stage}").exists() and time.time() < deadline:
                time.sleep(0.05)
            assert not Path(f"/proc/{stage}").exists()
        else:
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 7 and out == "interrupted\n"


def test_the_key_follows_the_code_the_interpreter_and_the_environment_but_not_the_stage(tmp_path):
    script = tmp_path / "stages" / "run.py"
    script.parent.mkdir()
    script.write_text("x = 1\n")
    env = {"OMP_NUM_THREADS": "1", "DVC_STAGE": "run@a"}
    key = forkserver.server_key(script, sys.path, env)
    assert forkserver.server_key(script, sys.path, {**env, "DVC_STAGE": "run@b", "PYTEST_CURRENT_TEST": "t"}) == key
    assert forkserver.server_key(script, sys.path, {**env, "OMP_NUM_THREADS": "2"}) != key
    assert forkserver.server_key(script, sys.path[1:], env) != key
    path = [str(script.parent), *sys.path]  # as Python starts a script
    key = forkserver.server_key(script, path, env)
    (script.parent / "__pycache__").mkdir()  # what the first import from the folder writes
    (script.parent / "__pycache__" / "_common.cpython-311.pyc").write_bytes(b"")
    assert forkserver.server_key(script, path, env) == key
    (script.parent / "_common.py").write_text("y = 2\n")  # a file beside the script
    assert forkserver.server_key(script, path, env) != key


def test_an_idle_server_exits_and_removes_its_socket(tmp_path):
    path = tmp_path / "idle.sock"
    start = time.time()
    subprocess.run([sys.executable, "-c", f"import sys; from pathlib import Path; from pelab.forkserver import serve; "
                    f"serve(Path({str(path)!r}), sys.path, idle_s=0.5)"], check=True, timeout=120)
    assert not path.exists() and time.time() - start < 60
