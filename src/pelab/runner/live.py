"""Live training curves through DVCLive (https://dvc.org/doc/dvclive), one directory per run.

Every logged row of the training loop (loss, learning rate, and the validation loss of tasks that compute
one) goes to ``<live_dir>/plots/metrics/<name>.tsv`` as it is produced, so ``dvc plots show``, ``dvc exp show``
and the DVC extension of VS Code follow a study while it runs. The train stage declares that folder as
its plot output (dvc.yaml); DVCLive's own ``dvc.yaml`` and experiment saving are off, because the pipeline
already is the experiment, and so is the per-step signal file it writes for VS Code's view of queued
experiments (see ``log`` below: parallel queue workers raced on it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def live_logger(live_dir: str | Path | None) -> Iterator[Callable[[dict[str, float]], None] | None]:
    """Yields ``log(row)`` for rows {"step", <metric>: value, ...} (None when ``live_dir`` is None)."""
    if live_dir is None:
        yield None
        return
    from dvclive import Live  # imported here: it is only needed by runs that log

    with Live(dir=str(live_dir), dvcyaml=None, save_dvc_exp=False, report=None) as live:
        def log(row: dict[str, float]) -> None:
            live.step = int(row["step"])
            for name, value in row.items():
                if name != "step" and value is not None:
                    live.log_metric(name, float(value))  # appends the row to plots/metrics/<name>.tsv
            # Not ``live.next_step()``: besides this sync it writes a signal file for VS Code that every DVCLive
            # process of a queued experiment shares (<repo>/.dvc/tmp/exps/run/DVCLIVE_STEP_COMPLETED), and
            # ``Live.end`` removes it with an unguarded exists-then-remove; two queue workers racing there failed
            # a whole experiment with FileNotFoundError (dvclive 3.49, `dvc queue start -j 2`).
            live.sync()

        yield log
    # DVCLive's summary repeats the curves' last row; without it the run's live folder holds curves only, so a
    # folder of runs (run@<task>-<scheme> declares dvclive/<task>/<scheme>) is a folder of plots.
    (Path(live_dir) / "metrics.json").unlink(missing_ok=True)
