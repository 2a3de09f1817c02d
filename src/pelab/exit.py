"""Leaving a process that imported torch without Python's teardown.

Python's finalisation after ``import torch`` (its modules' dictionaries cleared, their objects freed one by one,
torch's exit handlers) takes 0.6-0.7 s on a 2-core CI machine, as long as a smoke-size stage trains; the default
study starts some hundred such processes (benchmarks/results/suite_time.md, 2026-12-02 (23)). A stage script or the
CLI has written and closed every file it makes by the time its command returns (pelab writes through ``with``
blocks and ``pelab.io``'s atomic renames; the report's figure processes are joined), so its process may end at once:
``run_and_exit`` flushes the standard streams and calls ``os._exit`` with the command's status. An exception that is
not an exit (a bug) propagates as usual, with its traceback and the ordinary teardown; so does every exit under a
profiler or tracer (``python -m cProfile``, coverage), which writes its data in that teardown.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, NoReturn


def exit_status(code: object) -> int:
    """The process status ``sys.exit(code)`` gives: 0 for None, the int, else 1 (the code is printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_and_exit(command: Callable[[], object]) -> NoReturn:
    """Run ``command`` (a click command in standalone mode, which ends by raising ``SystemExit``), flush stdout and
    stderr, and end the process with its status, skipping the interpreter's teardown."""
    try:
        command()
        status = 0
    except SystemExit as done:
        status = exit_status(done.code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say on it
            pass
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(status)  # the profiler's or tracer's own exit writes its data
    os._exit(status)
