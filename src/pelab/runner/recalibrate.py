"""Fine-tune the trained runs of one (task, scheme) with each recalibration method the task names for it
(``Scoring.recalibrations``, ``pelab.tasks.scoring``: the LM's, ``pelab.tasks.lm.recalibrate``; the length study's,
``pelab.tasks.length.recalibrate``), and read them back for evaluation.

A fine-tuned run is a run: seeded, written atomically, kept (``runner.kept_runs``: reused only if fine-tuned from
the same base weights, settings and code), resumed from the state the fine-tune in progress saves, and kept at its step
of lowest validation loss. ``runs/<task>/<scheme>/recalibrated/<method>/seed_<k>/``::

    model.pt      the whole model's weights (the base run's architecture; the method's module is rebuilt on loading)
    run.json      what it was fine-tuned from (the base run's weights' sha256, the fine-tune's settings) and its cost
    history.csv   per logged step: step, loss, lr, val_loss (at M·L, the method in place)
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from pelab import io
from pelab.config import to_dict
from pelab.device import pick_device, precision, use_deterministic_algorithms
from pelab.runner.checkpoint import RUN_FILE, WEIGHTS, load_run, run_dir
from pelab.runner.kept_runs import KeptRuns, fingerprint
from pelab.seeding import seeded
from pelab.tasks import get_task
from pelab.tasks.scoring import scoring
from pelab.training.loop import train

if TYPE_CHECKING:
    from pelab.params import Params

SELECTED_ON = "val_loss"
DROPOUT_OFFSET = 7_100_017  # a fine-tune's dropout stream: the run's seed plus this (its rows are the task's draws)
RECALIBRATED = "recalibrated"  # the folder beside a scheme's seeds


def recalibrated_dir(root: str | Path, task: str, scheme: str, method: str, seed: int) -> Path:
    """``root/<task>/<scheme>/recalibrated/<method>/seed_<k>``."""
    return run_dir(root, task, scheme, seed).parent / RECALIBRATED / method / f"seed_{seed}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _code(method: Any, *parts: Any, builders: tuple[Any, ...] = ()) -> str:
    """The source of this module, of ``method.sources()`` (the methods' module and RoPE's extensions), of the modules
    defining ``parts`` (the fine-tune's batches and loss) and the text of ``builders`` (the task's ``Scoring`` methods
    that set the fine-tune up: their text, not their module's, whose evaluation code fine-tunes nothing): an edit to
    any fine-tunes again (what the base run was trained from is in the identity too)."""
    import inspect

    sources = {Path(__file__), *method.sources(), *(Path(inspect.getsourcefile(p)) for p in parts)}
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in sorted(sources)))
    for builder in builders:
        digest.update(inspect.getsource(builder).encode())
    return digest.hexdigest()


def recalibrate_runs(params: Params, task_name: str, scheme: str, seeds: Sequence[int], data_dir: str | Path,
                     runs_root: str | Path, device: str | None = None, kept: str | Path | None = None,
                     save_every_s: float = 300.0, echo=print) -> list[Path]:
    """Fine-tune each seed's run (``runs_root``) with each method ``Scoring.recalibrations`` names for the scheme, one
    after another; returns the fine-tuned runs' folders. ``kept``: the (task, scheme)'s kept-runs folder
    (``runner.kept_runs``); each method keeps its runs in ``<kept>/recalibrated/<method>/``."""
    task, cfg = get_task(task_name), params.task(task_name)
    score = scoring(task)
    methods = score.recalibrations(cfg, scheme)
    if not methods:
        return []
    dev = pick_device(device or params.device)
    data = task.load_data(Path(data_dir))
    cfg = task.budget(cfg, data)
    use_deterministic_algorithms()
    trained_from = fingerprint(data_dir, task_name, scheme) if kept is not None else ""
    done = []
    for method in methods:
        store = KeptRuns(Path(kept) / RECALIBRATED / method.name) if kept is not None else None
        for seed in seeds:
            base = run_dir(runs_root, task_name, scheme, seed)
            out = recalibrated_dir(runs_root, task_name, scheme, method.name, seed)
            run = load_run(base)
            tuning, model, next_batch, loss = score.recalibration(cfg, data, method, seed, run.model)
            identity = {"task": task_name, "scheme": scheme, "method": method.name, "base": _sha256(base / WEIGHTS),
                        "multiple": cfg.eval.recalibrate_multiple, "data": to_dict(tuning.data),
                        "train": to_dict(tuning.train), "precision": precision(dev),
                        "code": _code(method, next_batch, loss, builders=(
                            score.recalibration, score.recalibrated_model, score.recalibration_validation))
                        + trained_from,
                        "selected_on": SELECTED_ON}
            done.append(out)
            if store is not None and store.restore(seed, identity, out, None):
                echo(f"note: {task_name} {scheme}+{method.label} seed {seed} was fine-tuned before from the same "
                     "inputs; kept")
                continue
            validate = score.recalibration_validation(tuning, data, dev)
            start = time.perf_counter()
            with seeded(seed + DROPOUT_OFFSET):  # the dropout streams, the same for every method
                [result] = train(
                    [model], [next_batch], loss, tuning.train, dev, desc=f"{task_name} {scheme}+{method.label} "
                    f"seed {seed}", on_log=(lambda step, m: validate(m)) if validate else None,
                    what=[f"task {task_name}, scheme {scheme}, recalibration {method.name}, seed {seed}"],
                    state_file=None if store is None else store.state_file, state_key={**identity, "seed": seed},
                    save_every_s=save_every_s, graphs=False, select_on=SELECTED_ON)
            cost = {"best_step": result.best_step, "best_val_loss": result.best_val_loss, "steps": tuning.train.steps,
                    "tokens": result.tokens, "wall_time_s": result.wall_time_s,
                    "total_time_s": time.perf_counter() - start}
            with io.atomic_dir(out) as tmp:
                torch.save(run.model.cpu().state_dict(), tmp / WEIGHTS)
                io.write_csv(tmp / "history.csv", result.history)
                io.write_json(tmp / RUN_FILE, {**identity, "seed": seed, "profile": params.profile, "cost": cost})
            if store is not None:
                store.keep(seed, out, None)
                store.state_file.unlink(missing_ok=True)
            echo(f"fine-tuned {task_name} {scheme}+{method.label} seed {seed}: best val loss "
                 f"{result.best_val_loss:.4f} at step {result.best_step}/{tuning.train.steps}, "
                 f"{result.wall_time_s:.1f} s")
    return done


def load_recalibrated(params: Params, runs_root: str | Path, task_name: str, scheme: str, method: Any,
                      seed: int) -> tuple[nn.Module, dict[str, Any]]:
    """The fine-tuned model of (``task_name``, ``scheme``, ``method``, ``seed``) with its method's module in place (in
    eval mode, on the CPU), and its ``run.json``."""
    path = recalibrated_dir(runs_root, task_name, scheme, method.name, seed)
    if not (path / RUN_FILE).exists():
        raise FileNotFoundError(f"no fine-tuned run at {path} (missing {RUN_FILE}); run its stage first")
    meta = io.read_json(path / RUN_FILE)
    run = load_run(run_dir(runs_root, task_name, scheme, seed))
    run.model.load_state_dict(torch.load(path / WEIGHTS, weights_only=True))
    tuned = scoring(get_task(task_name)).recalibrated_model(params.task(task_name), run.model, method)
    return tuned.eval(), meta


def recalibrated_rows(params: Params, runs_root: str | Path, task_name: str, scheme: str, seed: int, data: Any,
                      device: torch.device) -> list[dict[str, Any]]:
    """The evaluation rows of every fine-tuned run of (``task_name``, ``scheme``, ``seed``) (each method's split
    suffix), of the run as trained read with each method's module (``Method.untuned_suffix``: the method's "before"),
    and each fine-tune's cost under split ``train<suffix>``; tidy, with task, pe and seed."""
    task, cfg = scoring(get_task(task_name)), params.task(task_name)
    rows: list[dict[str, Any]] = []
    trained = load_run(run_dir(runs_root, task_name, scheme, seed)).model  # the run as trained, read once
    read_before: set[str] = set()
    for method in task.recalibrations(cfg, scheme):
        model, meta = load_recalibrated(params, runs_root, task_name, scheme, method, seed)
        with torch.no_grad():
            rows += task.evaluate_recalibrated(cfg, model.to(device), data, device, method.suffix)
            if method.before is not None and method.before not in read_before:  # its "before": the run as trained,
                before = method.before_method  # read with the same module (PoSE's: PI's, listed or not)
                untuned = task.recalibrated_model(cfg, trained, before)
                rows += task.evaluate_recalibrated(cfg, untuned.eval().to(device), data, device,
                                                   before.untuned_suffix)
                read_before.add(before.name)
        rows += [{"split": "train" + method.suffix, "length": "all", "metric": metric, "value": float(meta["cost"][metric])}
                 for metric in ("best_step", "steps", "tokens", "wall_time_s") if meta["cost"].get(metric) is not None]
    return [{"task": task_name, "pe": scheme, "seed": seed, **row} for row in rows]
