"""One error path for stage scripts and the CLI: bad input -> one line on stderr, exit status 2.

A ``ValueError`` or ``FileNotFoundError`` raised anywhere below (config validation, a missing corpus, a
diverged run) is the user's to fix and is shown as ``error: <message>``; anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import functools
import sys

USER_ERRORS = (ValueError, FileNotFoundError)


def report_and_exit(err: BaseException) -> None:
    message = " ".join(str(err).split("\n")[0].split()) or type(err).__name__
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def one_line_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as err:
            report_and_exit(err)

    return wrapper
