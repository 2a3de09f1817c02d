"""Live training curves, one directory per run, in the layout DVCLive writes (https://dvc.org/doc/dvclive):
``<live_dir>/plots/metrics/<name>.tsv``, a tab-separated ``step`` column and one named after the metric (DVCLive
adds a ``timestamp`` column, which the plots do not read).

Every logged row of the training loop (loss, learning rate, and the validation loss of tasks that compute one)
is appended as it is produced, so ``dvc plots show``, ``dvc exp show`` and the DVC extension of VS Code follow
a study while it runs. The run stage declares the folder as its plot output (dvc.yaml).

Written here rather than through ``dvclive.Live``: the files are all the pipeline reads of it, and ``Live``
costs each stage's process about 2 s (it imports pandas and DVC's repository code, then opens the repository),
more than a smoke-size run trains (benchmarks/results/suite_time.md). It also wrote a signal file for VS Code
that every process of a queued experiment shares, which two parallel queue workers raced on.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def live_logger(live_dir: str | Path | None) -> Iterator[Callable[[dict[str, float]], None] | None]:
    """Yields ``log(row)`` for rows {"step", <metric>: value, ...} (None when ``live_dir`` is None). The folder is
    emptied first, as DVCLive empties it for a run that does not resume: a run's curves are its own."""
    if live_dir is None:
        yield None
        return
    metrics = Path(live_dir) / "plots" / "metrics"
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True)

    def log(row: dict[str, float]) -> None:
        step = int(row["step"])
        for name, value in row.items():
            if name == "step" or value is None:
                continue
            path = metrics / f"{name}.tsv"
            header = "" if path.exists() else f"step\t{name}\n"
            with path.open("a") as f:  # closed per row: a reader (dvc plots, VS Code) sees whole rows
                f.write(f"{header}{step}\t{float(value)!r}\n")

    yield log
