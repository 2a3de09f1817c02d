"""``pelab.exit``: a stage script or the CLI ends without Python's teardown, with its command's status, having
written everything it printed and every file it closed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path

    import click

    from pelab.errors import one_line_errors
    from pelab.exit import run_and_exit


    @click.command()
    @click.argument("how")
    @click.argument("out")
    @one_line_errors
    def main(how, out):
        Path(out).write_text("finished")
        print("x" * 100_000)  # more than a pipe's buffer: every byte must reach the reader
        print("partial line, no newline", end="", file=sys.stderr)
        if how == "bad":
            raise ValueError("bad value 'zz'; valid choices: a, b")
        if how == "message":
            sys.exit("stopped: a message")
        if how == "status":
            sys.exit(3)


    run_and_exit(main)
""")


@pytest.mark.parametrize("how,status", [("ok", 0), ("bad", 2), ("message", 1), ("status", 3)])
def test_the_process_ends_with_the_command_s_status_and_all_it_wrote(tmp_path, how, status):
    script, out = tmp_path / "stage.py", tmp_path / "out.txt"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script), how, str(out)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": ""})
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == "x" * 100_000 + "\n" and out.read_text() == "finished"
    assert proc.stderr.startswith("partial line, no newline")
    said = {"ok": "", "bad": "error: bad value 'zz'; valid choices: a, b\n", "message": "stopped: a message\n",
            "status": ""}[how]
    assert proc.stderr == "partial line, no newline" + said


def test_a_bug_keeps_its_traceback_and_a_non_zero_status(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text("from pelab.exit import run_and_exit\nrun_and_exit(lambda: 1 / 0)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": ""})
    assert proc.returncode == 1 and "ZeroDivisionError" in proc.stderr and "Traceback" in proc.stderr


def test_every_stage_script_and_the_cli_leave_through_it():
    root = SRC.parent
    for script in sorted((root / "stages").glob("*.py")):
        if script.name != "_common.py":
            assert script.read_text().rstrip().endswith('if __name__ == "__main__":\n    run_and_exit(main)'), script
    assert 'pelab = "pelab.cli:entry"' in (root / "pyproject.toml").read_text()


def test_under_a_profiler_the_process_exits_as_usual_so_the_profile_is_written(tmp_path):
    script, out, profile = tmp_path / "stage.py", tmp_path / "out.txt", tmp_path / "stage.prof"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), str(script), "status", str(out)],
                          capture_output=True, text=True, env={"PYTHONPATH": str(SRC), "PATH": ""})
    # (cProfile's own main swallows the script's SystemExit: its status is cProfile's)
    assert out.read_text() == "finished" and profile.stat().st_size > 0, proc.stderr
