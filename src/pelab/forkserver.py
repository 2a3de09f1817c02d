"""Stage processes forked from a warm one: the pipeline's fixed cost of starting Python with torch, paid once.

A ``dvc repro`` of the default study starts some hundred stage processes, and at the smoke size each spends more time
importing torch and pelab (about 1.5 s on a 2-core CI machine) than training (benchmarks/results/suite_time.md,
2026-12-03 (26)). The idea is multiprocessing's ``forkserver`` (and Android's zygote): one server process imports the
modules every stage needs once (``PRELOAD``), and each stage command, instead of importing them again, asks it to
``fork`` a child that runs the stage script with the command's argv, working directory, environment and standard
streams. The command waits for the child and ends with its status, so to DVC (or a shell) nothing differs but the
time.

The stage scripts call ``hand_over`` first. It hands the stage to a server when one is serving the same code (the
key: the interpreter, ``sys.path``, the environment but for per-stage variables such as ``DVC_STAGE``, and the size
and mtime of every file of the pelab package and of the script's folder); with none, it starts one for that key and
waits for it to load (about as long as its own imports would take), so that every stage of a study starts the same
way and its time and memory are measured alike. A server serves one key; after ``IDLE_S`` seconds with no stage
running it exits. What the stage sees, and that it is the same:

* the child is a fresh ``fork`` of a process that has only imported modules: it has trained nothing, opened no file
  and initialised neither CUDA nor a thread pool (``serve`` checks before it serves), and Python reseeds ``random``
  in every fork; pelab seeds everything a run draws itself (``pelab.seeding``);
* a code change gives a new key, so no stage ever runs code older than its files;
* a killed command kills its stage: the server kills the child's process group when the command's end of the
  connection closes (DVC's SIGKILL included), and SIGINT, SIGTERM and SIGHUP are passed on to it.

``PELAB_FORKSERVER=0`` turns it off (every command runs in its own process, as before), and so does a profiler or
tracer in the command. Linux only (``fork`` after importing torch is not safe on macOS). Stdlib only: this module is
imported before anything heavy.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PRELOAD = ("torch", "numpy", "click", "yaml", "pelab.errors", "pelab.exit", "pelab.params", "pelab.tasks",
           "pelab.compose", "pelab.runner.checkpoint", "pelab.runner.evaluate", "pelab.runner.recalibrate",
           "pelab.runner.train", "pelab.runner.tune", "pelab.runner.scheme_records", "pelab.pipeline.code_records")
# (not pandas: its pyarrow starts an allocator thread, which a fork would not carry)
IDLE_S = 120.0  # a server with no stage running exits after this long
WAIT_S = 120.0  # how long the first command waits for the server it started to load
VOLATILE_ENV = ("DVC_STAGE", "PYTEST_CURRENT_TEST", "PWD", "OLDPWD", "SHLVL", "_")  # differ stage to stage
STREAMS = (0, 1, 2)
_MAX_MESSAGE = 1 << 20
served = False  # True in a stage process forked by a server


def enabled() -> bool:
    return (sys.platform == "linux" and hasattr(socket, "send_fds") and os.environ.get("PELAB_FORKSERVER", "1") != "0"
            and sys.gettrace() is None and sys.getprofile() is None)


def runtime_dir() -> Path:
    """Where the servers' sockets live: ``PELAB_FORKSERVER_DIR``, else a folder of this user's in the temp dir."""
    default = Path(tempfile.gettempdir()) / f"pelab-forkserver-{os.getuid()}"
    path = Path(os.environ.get("PELAB_FORKSERVER_DIR") or default)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _tree_stamp(folder: Path) -> list[tuple[str, int, int]]:
    """(path, size, mtime_ns) of every file under ``folder`` but bytecode caches."""
    stamps = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            st = os.stat(os.path.join(root, name))
            stamps.append((os.path.join(root, name), st.st_size, st.st_mtime_ns))
    return stamps


def server_key(script: Path, path: list[str], env: dict[str, str]) -> str:
    """What a server's preloaded modules depend on, hashed: the interpreter, ``path`` (``sys.path``, each folder's
    mtime but the script's: an install changes it), the environment but ``VOLATILE_ENV``, and every file of the pelab
    package and of the script's folder."""
    import importlib.util

    spec = importlib.util.find_spec("pelab")
    package = Path(next(iter(spec.submodule_search_locations)))
    folders = [(p, os.stat(p).st_mtime_ns) for p in path  # not the script's: writing its __pycache__ changes that
               if os.path.isdir(p) and Path(p).resolve() != script.parent]
    record = {"python": [sys.executable, sys.version], "path": path, "folders": folders,
              "env": sorted((k, v) for k, v in env.items() if k not in VOLATILE_ENV),
              "files": _tree_stamp(package) + _tree_stamp(script.parent)}
    return hashlib.sha256(json.dumps(record).encode()).hexdigest()


def socket_path(key: str) -> Path:
    return runtime_dir() / f"{key[:24]}.sock"


def hand_over(name: str, script: str) -> None:
    """At the top of a stage script: ``hand_over(__name__, __file__)``. Run as a command with a server serving this
    code (started here and waited for when there is none), the server's child runs the script and this process ends
    with its status; otherwise (turned off, or no server would serve) returns, and the script runs here."""
    if name != "__main__" or served or not enabled():
        return
    script_path = Path(script).resolve()
    key = server_key(script_path, list(sys.path), dict(os.environ))
    path = socket_path(key)
    conn = _connect(path)
    if conn is None:  # no server yet: start one and wait for it, so that every stage starts the same way
        if not _wait_for(_start_server(path), path):
            return
        conn = _connect(path)
        if conn is None:
            return
    request = {"script": str(script_path), "argv": list(sys.argv), "cwd": os.getcwd(),
               "env": dict(os.environ), "path": list(sys.path)}
    with conn:
        socket.send_fds(conn, [json.dumps(request).encode()], list(STREAMS))
        reply = _receive(conn)
        if reply is None or "pid" not in reply:  # the server is going away: run here
            return
        _forward_signals(reply["pid"])
        status = _receive(conn)
    _exit_like(status)


def _receive(conn: socket.socket) -> dict[str, Any] | None:
    while True:
        try:
            data = conn.recv(_MAX_MESSAGE)
        except InterruptedError:
            continue
        except OSError:
            return None
        return json.loads(data) if data else None


def _forward_signals(pid: int) -> None:
    def forward(signum, frame):
        try:
            os.killpg(pid, signum)
        except ProcessLookupError:
            pass
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)


def _exit_like(status: dict[str, Any] | None) -> None:
    """End as the child ended: its exit code, or killed by its signal."""
    _flush()
    if status is None:
        print("error: the stage's warm process (pelab.forkserver) ended without its status; run it again, or with "
              "PELAB_FORKSERVER=0", file=sys.stderr)
        os._exit(1)
    if "signal" in status:
        signal.signal(status["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), status["signal"])
        os._exit(128 + status["signal"])
    os._exit(status["code"])


def _connect(path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    return conn


def _wait_for(server: subprocess.Popen, path: Path, timeout_s: float = WAIT_S) -> bool:
    """Whether a server listens at ``path`` within ``timeout_s``: ours, or another command's that took the key's
    lock first (ours then exits at once). False when none will: ours refused to serve (``_fork_safe``) and no other
    holds the lock."""
    import fcntl

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            return True
        if server.poll() is not None:
            with open(path.with_suffix(".lock"), "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    pass  # another server is loading
                else:
                    return path.exists()
        time.sleep(0.02)
    return False


def _start_server(path: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in VOLATILE_ENV}
    log = open(path.with_suffix(".log"), "ab")
    with log:
        return subprocess.Popen([sys.executable, "-m", "pelab.forkserver", str(path), json.dumps(sys.path)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd="/",
                                start_new_session=True)


# ---------------------------------------------------------------------------------------------------------- server

def serve(path: Path, sys_path: list[str], idle_s: float = IDLE_S) -> None:
    """Take the key's lock (one server per key), import ``PRELOAD``, then fork a child per request until ``idle_s``
    pass with no stage running."""
    import fcntl
    import importlib
    import selectors

    lock = open(path.with_suffix(".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another server serves this key
    sys.path[:] = sys_path
    importlib.import_module("numpy")
    blas_threads = _threads()  # OpenBLAS's pool (none with OMP_NUM_THREADS=1): it re-creates it in a fork's child
    for module in PRELOAD:
        importlib.import_module(module)
    if not _fork_safe(blas_threads):
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    loading = path.with_suffix(".new")
    if loading.exists():
        loading.unlink()
    listener.bind(str(loading))
    listener.listen(64)
    os.replace(loading, path)  # listening before its name appears: a command that finds the name connects
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    children: dict[int, socket.socket] = {}
    idle_since = time.monotonic()
    try:
        while True:
            timeout = None if children else idle_s - (time.monotonic() - idle_since)
            if timeout is not None and timeout <= 0:
                break
            for event, _ in selector.select(timeout):
                if event.data == "accept":
                    conn, _ = listener.accept()
                    pid = _start_child(conn, (lock, listener, selector, wake_r, wake_w, *children.values()))
                    if pid is not None:
                        children[pid] = conn
                        selector.register(conn, selectors.EVENT_READ, pid)
                elif event.data == "child":  # SIGCHLD woke the loop: drain the wakeup pipe; reaped below
                    _drain(wake_r)
                else:  # the command's end closed (or sent something): it is gone, so is its stage
                    pid = event.data
                    if not _peek_open(children[pid]):
                        _kill_group(pid)
                        selector.unregister(children[pid])
            _reap(children, selector)
            if children:
                idle_since = time.monotonic()
    finally:
        if path.exists():
            path.unlink()
        listener.close()


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _peek_open(conn: socket.socket) -> bool:
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(children: dict[int, socket.socket], selector) -> None:
    """Send each finished child's status to its command and forget it."""
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 1 << 8
        if not done:
            continue
        conn = children.pop(pid)
        reply = ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"code": os.WEXITSTATUS(status)})
        try:
            selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        try:
            conn.send(json.dumps(reply).encode())
        except OSError:
            pass
        conn.close()


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _fork_safe(allowed_threads: int) -> bool:
    """Forking is safe only from a process with no thread but OpenBLAS's (its ``pthread_atfork`` handlers stop and
    re-create its pool) and no CUDA context."""
    torch = sys.modules.get("torch")
    threads = _threads()
    cuda = torch is not None and torch.cuda.is_initialized()
    if threads > allowed_threads or cuda:
        print(f"pelab.forkserver: not serving ({threads} threads, CUDA initialised: {cuda})", file=sys.stderr)
        return False
    return True


def _start_child(conn: socket.socket, servers: tuple) -> int | None:
    """Read a request (its streams come as file descriptors) and fork its stage; the child never returns, and
    closes ``servers`` (the key's lock, which a running stage would otherwise hold after the server's end, and the
    server's sockets, selector and wakeup pipe)."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, _MAX_MESSAGE, len(STREAMS))
        request = json.loads(data)
    except (OSError, ValueError):
        conn.close()
        return None
    if len(fds) != len(STREAMS):
        for fd in fds:
            os.close(fd)
        conn.close()
        return None
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        conn.send(json.dumps({"pid": pid}).encode())
        return pid
    try:  # the child: become the command's stage process
        os.setpgid(0, 0)  # a group of its own: a kill reaches what it starts too
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        for held in servers:
            if isinstance(held, int):
                os.close(held)
            else:
                held.close()
        for target, fd in zip(STREAMS, fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        _run_stage(request)
    except SystemExit as done:
        from pelab.exit import exit_status

        _flush()
        os._exit(exit_status(done.code))
    except BaseException:
        import traceback

        traceback.print_exc()
        _flush()
        os._exit(1)
    _flush()
    os._exit(0)


def _run_stage(request: dict[str, Any]) -> None:
    global served
    import runpy

    served = True
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = request["path"]
    sys.argv[:] = request["argv"]
    _reopen_streams()
    runpy.run_path(request["script"], run_name="__main__")


def _reopen_streams() -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` over the command's descriptors, buffered as Python's start would."""
    import io

    encoding = sys.__stdout__.encoding if sys.__stdout__ is not None else "utf-8"

    def text(fd: int, mode: str, **kw) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        tty = raw.isatty()
        buffered = io.BufferedWriter(raw) if mode == "w" else io.BufferedReader(raw)
        return io.TextIOWrapper(buffered, encoding=encoding, line_buffering=tty or fd == 2,
                                write_through=fd == 2, **kw)

    sys.stdin = sys.__stdin__ = text(0, "r")
    sys.stdout = sys.__stdout__ = text(1, "w")
    sys.stderr = sys.__stderr__ = text(2, "w", errors="backslashreplace")


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


if __name__ == "__main__":  # run by _start_server; serve from the module proper, whose ``served`` the stages read
    from pelab.forkserver import serve as serve_key

    serve_key(Path(sys.argv[1]), json.loads(sys.argv[2]))
