"""What a run's training has made so far, as one object: the weights and AdamW moments (through the seed stack), the
schedule, the step, each seed's curve, snapshots and best weights so far, the tokens seen, the RNG and the clocks.
``state_dict`` is what a saved training state holds (``training.loop.save_state``) and ``load_state_dict`` resumes
from it, so a killed run continues where it stopped and ends as if never killed."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pelab.training.adamw import AdamW, Schedule
from pelab.training.stacking import SeedStack


@dataclass
class TrainResult:
    history: list[dict[str, float]] = field(default_factory=list)  # {"step", "loss", "lr"}
    wall_time_s: float = 0.0  # optimisation only: time spent in ``on_log`` and ``snapshot`` is not counted
    eval_time_s: float = 0.0  # time spent in ``on_log`` and ``snapshot``
    tokens: int = 0
    peak_memory_mb: float = 0.0
    snapshots: list[tuple[int, dict[str, torch.Tensor]]] = field(default_factory=list)
    cuda_graphs: bool = False  # the steps replayed from CUDA graphs (``training.graphs``)
    # the logged step whose weights the model holds on return (``BestWeights``), the validation loss there and at
    # the last step; best_step is the last step and both losses None when nothing was selected on
    best_step: int = 0
    best_val_loss: float | None = None
    final_val_loss: float | None = None


class BestWeights:
    """Each seed's weights at its lowest ``key`` loss so far (one rule for every scheme and seed: the logged step
    of lowest validation loss, the earlier on a tie), kept on the device beside training.

    Early stopping's model selection (Prechelt, "Early stopping - but when?", 1998) without the stopping: every
    run trains its whole budget, so each curve is complete, and is scored at its best logged step. ``key`` must
    name a loss on data held out from training and from every test set (``val_loss``)."""

    def __init__(self, n_seeds: int, key: str | None) -> None:
        self.key = key
        self.steps: list[int] = [0] * n_seeds
        self.losses: list[float] = [math.inf] * n_seeds
        self.states: list[dict[str, torch.Tensor] | None] = [None] * n_seeds

    def offer(self, seed: int, step: int, row: dict[str, float], model: nn.Module) -> None:
        """Seed ``seed``'s logged ``row`` at ``step``, ``model`` holding its current weights."""
        loss = row.get(self.key) if self.key else None
        if loss is not None and math.isfinite(loss) and loss < self.losses[seed]:
            self.steps[seed], self.losses[seed] = step, float(loss)
            self.states[seed] = {name: t.detach().clone() for name, t in model.state_dict().items()}

    def restore(self, models: Sequence[nn.Module], results: Sequence[TrainResult], last_step: int) -> None:
        """Load each seed's best weights into its model and record the selection in its result."""
        for s, (model, result) in enumerate(zip(models, results)):
            final = result.history[-1].get(self.key) if self.key and result.history else None
            result.final_val_loss = None if final is None else float(final)
            if self.states[s] is None:  # nothing logged to select on: the last step's weights
                result.best_step = last_step
                continue
            model.load_state_dict(self.states[s])
            result.best_step, result.best_val_loss = self.steps[s], self.losses[s]

    def state(self) -> list[tuple[int, float, dict[str, torch.Tensor] | None]]:
        """What a saved training state keeps of the selection (the weights on the CPU)."""
        return [(step, loss, None if w is None else {n: t.cpu() for n, t in w.items()})
                for step, loss, w in zip(self.steps, self.losses, self.states)]

    def load(self, saved: list[tuple[int, float, dict[str, torch.Tensor] | None]], device: torch.device) -> None:
        for s, (step, loss, w) in enumerate(saved):
            self.steps[s], self.losses[s] = step, loss
            self.states[s] = None if w is None else {n: t.to(device) for n, t in w.items()}


class TrainingState:
    """One training of S seeds in progress (``training.loop.train``). ``clock`` and ``eval_clock`` are the seconds
    spent optimising and in the per-seed callbacks, summed over the processes that trained it."""

    def __init__(self, seeds: SeedStack, optimizer: AdamW | torch.optim.Optimizer, schedule: Schedule,
                 best: BestWeights, device: torch.device, graphed: bool) -> None:
        self.seeds, self.optimizer, self.schedule, self.best = seeds, optimizer, schedule, best
        self.device, self.graphed = device, graphed
        self.results = [TrainResult() for _ in seeds.models]
        self.tokens = torch.zeros(len(seeds.models), dtype=torch.long, device=device)  # (S,)
        self.step = 0  # the steps taken
        self.eval_time_s = 0.0
        self._start = time.perf_counter()  # minus the optimisation time of earlier processes, once resumed

    @property
    def wall_time_s(self) -> float:
        """Seconds since training began, over every process that trained it (the callbacks' time included)."""
        return time.perf_counter() - self._start

    def per_seed(self, call: Callable[[int, nn.Module], None]) -> None:
        """``call(s, model_s)`` for every seed, timed as evaluation (``TrainResult.eval_time_s``)."""
        tick = time.perf_counter()
        self.seeds.for_each(call)
        self.eval_time_s += time.perf_counter() - tick

    def log(self, step: int, losses: list[float], on_log: Callable[[int, nn.Module], dict[str, float]] | None,
            on_rows: Sequence[Callable[[dict[str, float]], None]] | None) -> list[dict[str, float]]:
        """Seed s's row at ``step`` (its mean loss since the last, the lr, what ``on_log`` adds), appended to its
        curve, offered to its best weights and passed to ``on_rows[s]``."""
        rows = [{"step": step, "loss": loss, "lr": self.schedule.lr()} for loss in losses]
        if on_log is not None:
            def log_seed(s: int, m: nn.Module) -> None:
                rows[s].update(on_log(step, m))
                self.best.offer(s, step, rows[s], m)

            self.per_seed(log_seed)
        for s, row in enumerate(rows):
            self.results[s].history.append(row)
            if on_rows is not None:
                on_rows[s](row)
        return rows

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, on the CPU."""
        params = self.seeds.params
        return {"step": self.step, "params": {n: t.detach().cpu() for n, t in params.items()},
                "optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict(),
                "rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
                "results": [(r.history, r.snapshots) for r in self.results], "tokens": self.tokens.cpu(),
                "best": self.best.state(), "wall_time_s": self.wall_time_s, "eval_time_s": self.eval_time_s}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (``state_dict``'s): weights, AdamW moments in the optimizer's own mode (eager or
        capturable), schedule, RNG, curves, tokens, best weights, step and clocks."""
        from pelab.training.loop import load_optimizer_state

        with torch.no_grad():
            for name, param in self.seeds.params.items():
                param.copy_(state["params"][name])
        load_optimizer_state(self.optimizer, state["optimizer"], self.device if self.graphed else None)
        self.schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        if self.device.type == "cuda" and state["cuda_rng"] is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        for result, (history, snapshots) in zip(self.results, state["results"]):
            result.history, result.snapshots = history, snapshots
        self.tokens += state["tokens"].to(self.device)
        self.best.load(state.get("best", []), self.device)
        self.step, self.eval_time_s = state["step"], state["eval_time_s"]
        self._start = time.perf_counter() - state["wall_time_s"]

    def finish(self, models: Sequence[nn.Module], steps: int) -> list[TrainResult]:
        """Each seed's weights written back into its model at its best step, and its result completed."""
        self.seeds.write_back()
        self.best.restore(models, self.results, steps)
        peak = 0.0
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            peak = torch.cuda.max_memory_allocated(self.device) / 2**20
        wall, total = self.wall_time_s - self.eval_time_s, int(self.tokens.sum())
        for result in self.results:
            result.wall_time_s, result.eval_time_s, result.peak_memory_mb, result.tokens = \
                wall, self.eval_time_s, peak, total
            result.cuda_graphs = self.graphed
        return self.results
