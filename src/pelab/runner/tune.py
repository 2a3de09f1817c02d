"""A learning rate per scheme, chosen on validation only, after the NoPE (Kazemnejad et al. 2023,
https://arxiv.org/abs/2305.19466) and randomized-PE (Ruoss et al. 2023, https://arxiv.org/abs/2305.16843) studies,
which tune each scheme on its own.

Seed ``tune.seed`` of a (task, scheme) trains at the task's ``train.lr`` times each of ``tune.scales`` on the task's
tuning data (``Task.tuning_data``: training rows and a validation split, no test rows); the scale with the lowest
best validation loss (over the logged steps: the loss of the weights the run keeps, ``training.loop.BestWeights``)
wins, so a rate that reaches a lower loss and then overfits is not passed over for one that overfits less, a tie going to the scale nearest the shared rate; then every seed trains at the chosen
rate on the whole training split, as the shared-rate runs do. Sweep runs and tuned runs are kept like any run
(``runner.kept_runs``): a second sweep trains nothing, and a chosen scale of 1 restores the shared-rate runs that
the train stage kept (so it trains nothing either). Where the task tunes on a validation split
(``Task.tunes_on_validation_split``: every task of pelab's studies) and training draws no random numbers, a sweep run is an
ordinary run at its rate, kept where the train stage (scale 1) and the tuned runs keep theirs: the sweep's seed at
scale 1 is the shared-rate run, and at the chosen scale it is that seed's tuned run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pelab import io
from pelab.io import CHOICE_FILE
from pelab.runner.train import draws_random_numbers, train_runs
from pelab.tasks import get_task
from pelab.training.loop import DivergedError

if TYPE_CHECKING:  # annotations only: params.py and the study records are not what a run is trained from
    from pelab.params import Params


def scale_name(scale: float) -> str:
    """The folder of one scale's sweep run: ``x0.5``, ``x1``, ``x2``."""
    return f"x{scale:g}"


def best_val_loss(run: str | Path) -> float:
    """The lowest validation loss a run logged: that of the weights it kept (its ``train_records.jsonl``)."""
    found = [row["value"] for row in io.read_jsonl(Path(run) / "train_records.jsonl")
             if row["split"] == "val" and row["metric"] == "loss"]
    if not found:
        raise ValueError(f"the run at {run} logged no validation loss; its task's tuning_data must give a val split")
    return float(found[0])


def choose(losses: dict[float, float]) -> float:
    """The scale of the lowest loss; among equal losses the one nearest 1 (then the smaller). A scale whose run
    diverged (a non-finite loss) is never chosen; if every one did, there is nothing to choose."""
    finite = {s: loss for s, loss in losses.items() if math.isfinite(loss)}
    if not finite:
        raise ValueError(f"every learning rate of the sweep diverged (scales {sorted(losses)}); lower tune.scales")
    best = min(finite.values())
    return min((s for s, loss in finite.items() if loss == best), key=lambda s: (abs(math.log(s)), s))


def live_dir(sweep_dir: str | Path, scale: float, seed: int, tuned: bool = False) -> Path:
    """Where a sweep run's (or a tuned run's) training curves are logged: beside the sweep, so that a run kept in
    the train stage's folder keeps its curves too (the train stage restores them with the run)."""
    return Path(sweep_dir) / "live" / ("tuned" if tuned else "sweep") / scale_name(scale) / f"seed_{seed}"


def kept_folder(kept: str | Path | None, scale: float, apart: bool = False) -> Path | None:
    """Where the runs of one (task, scheme) at ``scale`` are kept: the train stage's folder at scale 1, else
    ``tuned/x<scale>`` below it; sweep runs that are not ordinary runs (``apart``) under ``sweep/x<scale>``."""
    if kept is None:
        return None
    if apart:
        return Path(kept) / "sweep" / scale_name(scale)
    return Path(kept) if scale == 1.0 else Path(kept) / "tuned" / scale_name(scale)


def sweep(params: Params, task: str, scheme: str, data_dir: str | Path, sweep_dir: str | Path,
          kept: str | Path | None = None) -> dict[str, Any]:
    """Train seed ``tune.seed`` at every scale on the tuning data into ``sweep_dir/x<scale>/seed_<k>`` and write
    ``sweep_dir/choice.json``; returns that choice."""
    tune, sweep_dir = params.tune, Path(sweep_dir)
    # a sweep run is an ordinary run unless it trains on part of the training split, or its random draws depend on
    # the stack of seeds (one seed here, every seed in the train stage)
    apart = not get_task(task).tunes_on_validation_split or draws_random_numbers(params.task(task), scheme)
    losses = {}
    for scale in tune.scales:
        run = sweep_dir / scale_name(scale) / f"seed_{tune.seed}"
        try:
            train_runs(params.at_lr_scale(task, scale), task, scheme, [tune.seed], data_dir, [run],
                       live_dirs=[live_dir(sweep_dir, scale, tune.seed)], kept=kept_folder(kept, scale, apart),
                       tuning=True)
        except DivergedError as err:  # too high a rate for this scheme: the sweep goes on without it
            print(f"note: {task} {scheme} at {scale_name(scale)} the learning rate diverged: {err}")
            losses[scale] = math.inf
            continue
        losses[scale] = best_val_loss(run)
    chosen, lr = choose(losses), params.task(task).train.lr
    choice = {"task": task, "scheme": scheme, "seed": tune.seed, "shared_lr": lr,
              # a diverged run's loss as null (JSON has no infinity)
              "val_loss": {scale_name(s): loss if math.isfinite(loss) else None for s, loss in losses.items()},
              "chosen_scale": chosen, "chosen_lr": lr * chosen}
    io.write_json(sweep_dir / CHOICE_FILE, choice)
    return choice


def tune_runs(params: Params, task: str, scheme: str, data_dir: str | Path, sweep_dir: str | Path,
              out_dirs: Sequence[str | Path], kept: str | Path | None = None) -> dict[str, Any]:
    """``sweep``, then every seed of ``params.seeds`` trained at the chosen rate into ``out_dirs``; returns the
    choice. ``kept``: this (task, scheme)'s kept-runs folder (the train stage's), so a chosen scale of 1 restores
    the shared-rate runs."""
    choice = sweep(params, task, scheme, data_dir, sweep_dir, kept)
    scale = choice["chosen_scale"]
    train_runs(params.at_lr_scale(task, scale), task, scheme, params.seeds, data_dir, out_dirs,
               live_dirs=[live_dir(sweep_dir, scale, seed, tuned=True) for seed in params.seeds],
               kept=kept_folder(kept, scale))
    return choice
