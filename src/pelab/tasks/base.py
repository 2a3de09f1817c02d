"""The ``Task`` interface: everything the study runner needs to prepare, train and evaluate one task.

After DeepMind's ``GeneralizationTask`` + ``TASK_BUILDERS`` (randomized positional encodings): a task is
an object with a fixed set of methods, registered by name in ``pelab.tasks.TASKS``. The runner
(``pelab.runner``) never looks inside one. A task lives in its own folder, ``pelab/tasks/<name>/``:

* ``config.py`` — its config sections (``data``, ``model``, ``train``, ``eval``) as frozen dataclasses;
* ``data/`` — prepare (what the ``prepare@<name>`` stage writes) and load the data;
* ``model.py`` — the model it trains, built for any positional scheme;
* ``task.py`` — the ``Task`` subclass: batches, loss, validation (what training executes);
* ``evaluate.py`` — its ``Scoring`` (``pelab.tasks.scoring``): evaluation → tidy rows, the probe's rows, the
  report's captures, the fine-tunes of finished runs; reached by name, never by what training executes.

The DVC stages depend on exactly these pieces, so editing ``evaluate.py`` re-scores runs and never retrains. Params: ``<name>.data|model|train|eval`` and ``<name>.positional.<scheme>`` (the scheme's
options for this task — by default the global ``positional.<scheme>``, which a task may override).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from pelab.config import TrainConfig, from_dict

Batch = tuple[torch.Tensor, ...]
LossFn = Callable[[nn.Module, Batch], tuple[torch.Tensor, int]]  # (model, batch) -> (mean loss, tokens)
SECTIONS = ("data", "model", "train", "eval")


def loss_logits(logits: torch.Tensor) -> torch.Tensor:
    """Logits as a loss reads them: bf16 (autocast) rounded up to float32; float32 and float64 kept (a float64 model,
    as tests train one, keeps float64 through its loss)."""
    return logits if logits.dtype in (torch.float32, torch.float64) else logits.float()


@dataclass(frozen=True)
class TaskConfig:
    """One task's validated sections plus its positional options for every scheme of the study."""

    name: str
    data: Any
    model: Any
    train: TrainConfig
    eval: Any
    positional: dict[str, Any] = field(default_factory=dict)  # scheme -> Options

    def options(self, scheme: str) -> Any:
        from pelab.positional import scheme_options

        return self.positional.get(scheme) or scheme_options(scheme)


# the held-out curve every task's ``validation`` logs: the loss on a validation split, held out from training and
# from every test set; each run keeps its weights at the lowest (``training.loop.BestWeights``)
HELD_OUT_LOSSES = ("val_loss",)


class Task(ABC):
    """One task of the study. Subclasses set the class attributes and implement the abstract methods."""

    name: ClassVar[str]
    sections: ClassVar[dict[str, type]]  # "data" | "model" | "train" | "eval" -> dataclass; the model one has
    # d_model and n_heads (what the positional schemes are built with)
    headline: ClassVar[dict[str, list[str]]]  # split -> the metrics summarised over seeds in reports/summary.json
    # name in reports/metrics/<task>/<scheme>.json (what `dvc metrics show` prints, a handful per task) ->
    # (the splits to look for, first found wins; the metric)
    key_metrics: ClassVar[dict[str, tuple[tuple[str, ...], str]]]
    # the key metric schemes are ranked by when their learning rates are tuned (reports/tuning.json), and whether
    # higher is better
    ranked_by: ClassVar[tuple[str, bool]]
    # whether the task's model asks a randomized scheme for its positions (pelab.positional.randomized); the
    # randomized schemes are refused elsewhere rather than silently behaving like the scheme they wrap
    draws_positions: ClassVar[bool] = False
    # whether the seeds of one scheme may train together as one vectorised model (training.stacking): every
    # seed's batch at a step must stack into one tensor (same shape, or padded with ``batch_padding``)
    vectorises: ClassVar[bool] = True
    # whether stacking pays on the CPU (it always does on CUDA): False where measured slower there (the LM study:
    # five seeds stacked 2x slower than one after another on 2 cores, the vocabulary-sized logits dominate)
    stack_on_cpu: ClassVar[bool] = True
    # whether, on CUDA, each training batch shape's step is captured as a CUDA graph and replayed
    # (training.graphs): the same losses to the bit, a step 2-6x faster (benchmarks/results/gpu_h200_graphs.md);
    # for tasks whose batches take a few shapes (one graph each)
    graph_steps: ClassVar[bool] = True
    # whether, on CUDA, graphed seeds stack (training.stacking); False where one seed's graphed step is faster than
    # the stack's share of it (the LM study: the stack runs attention unfused under vmap)
    stack_when_graphed: ClassVar[bool] = True
    # the padding value of each tensor of a training batch, so that batches of different lengths stack; None:
    # the task's batches always have one shape
    batch_padding: ClassVar[tuple[int, ...] | None] = None
    # the forms of attention its models use, each scheme is built in: bidirectional (False) and/or causal (True)
    attention_forms: ClassVar[tuple[bool, ...]] = (False, True)
    # whether ``tuning_data`` is the data itself (a validation split held out from training): the learning-rate
    # sweep's runs are then ordinary runs, shared with the train and tuned runs at the same rate (pelab.runner.tune)
    tunes_on_validation_split: ClassVar[bool] = False
    # the params section the task reads, when tasks share one (the length study's ``length:``); else its name
    section: ClassVar[str | None] = None

    @property
    def params_section(self) -> str:
        return self.section or self.name

    # ---------------------------------------------------------------------------------- configuration
    def config(self, raw: dict[str, Any] | None, schemes: tuple[str, ...] = (),
               defaults: dict[str, Any] | None = None) -> TaskConfig:
        """Validate ``params[<params_section>]``; every scheme of the study must be buildable at the task's
        lengths. A scheme's options: its ``Options`` defaults, then ``defaults[scheme]`` (params
        ``positional.<scheme>``), then the section's ``positional.<scheme>``."""
        from pelab.positional import scheme_options

        raw, key, defaults = dict(raw or {}), self.params_section, dict(defaults or {})
        unknown = sorted(set(raw) - {*SECTIONS, "positional"})
        if unknown:
            raise ValueError(f"unknown key(s) {unknown} in {key}; valid keys: "
                             f"{', '.join(sorted({*SECTIONS, 'positional'}))}")
        parts = {s: from_dict(self.sections[s], raw.get(s), f"{key}.{s}") for s in SECTIONS}
        positional_raw = dict(raw.get("positional") or {})
        options = {s: scheme_options(s, {**(defaults.get(s) or {}), **(positional_raw.get(s) or {})},
                                     f"{key}.positional.{s}")
                   for s in dict.fromkeys([*schemes, *positional_raw])}  # every entry checked, listed or not
        positional = {s: options[s] for s in (schemes or positional_raw)}
        cfg = TaskConfig(self.name, positional=positional, **parts)
        self.check(cfg)
        return cfg

    def check_inputs(self, cfg: TaskConfig) -> None:
        """What the task's prepare reads beside params (a corpus folder), checked in one line by the check stage and
        by prepare, not whenever params load, so that prepared data stays usable once its source moves. Nothing by
        default."""

    def check(self, cfg: TaskConfig) -> None:
        """Cross-section checks: each scheme's positional modules (bidirectional and causal) can be built at the
        model's width and encode every length the task uses. Only those modules are built, not whole models:
        this runs whenever params load, at the start of every stage."""
        from pelab.positional import build_positional_encoding
        from pelab.positional.randomized import RandomizedPositions

        for scheme in cfg.positional:
            for causal in self.attention_forms:
                try:
                    pe = build_positional_encoding(scheme, d_model=cfg.model.d_model, n_heads=cfg.model.n_heads,
                                                   causal=causal, options=cfg.options(scheme))
                    pe.check_length(self.max_length(cfg))
                except ValueError as err:  # name the pair: the same scheme may suit another task
                    raise ValueError(f"task {self.name!r}, scheme {scheme!r}: {err}") from None
                if isinstance(pe, RandomizedPositions) and not self.draws_positions:
                    raise ValueError(f"scheme {scheme!r} randomizes positions, which task {self.name!r} does not "
                                     "support; use it in a study whose tasks draw positions (the length and LM studies)")

    # ------------------------------------------------------------------------------------------- data
    @abstractmethod
    def prepare(self, cfg: TaskConfig, out_dir: Path) -> None:
        """Write the task's data into ``out_dir`` (atomically); the same for every scheme and seed."""

    @abstractmethod
    def load_data(self, data_dir: Path) -> Any:
        """The prepared data, as the other methods take it."""

    @abstractmethod
    def data_info(self, data: Any) -> dict[str, Any]:
        """What building the model needs from the data (vocabulary size, …); saved beside the weights."""


    @abstractmethod
    def max_length(self, cfg: TaskConfig) -> int:
        """The longest sequence a model of this task is trained or evaluated on (positions 0..max-1)."""

    # ------------------------------------------------------------------------------------------ model
    @abstractmethod
    def build_model(self, model_cfg: Any, scheme: str, options: Any, seed: int, info: dict[str, Any]) -> nn.Module:
        """The model for ``scheme``. Same seed -> same initial weights of every parameter the schemes share."""

    # --------------------------------------------------------------------------------------- training
    @abstractmethod
    def batches(self, cfg: TaskConfig, data: Any, seed: int) -> Callable[[int], Batch]:
        """next_batch(step) -> CPU tensors; the order depends on the seed only (same for every scheme)."""

    @abstractmethod
    def loss(self, cfg: TaskConfig) -> LossFn:
        """The training loss."""

    def validation(self, cfg: TaskConfig, data: Any, device: torch.device) -> Callable[[nn.Module], dict] | None:
        """Called at every log step: entries added to the training history, ``val_loss`` on the task's validation
        split among them (never test data: each run's weights are chosen on it)."""
        return None

    def tuning_data(self, cfg: TaskConfig, data: Any) -> Any:
        """The data a learning-rate sweep trains and selects on (``pelab.runner.tune``): training rows and a
        validation split on which ``validation`` then logs ``val_loss``, and no test rows. A task with a validation
        split returns ``data``; one without carves it out of its training split."""
        if self.tunes_on_validation_split:
            return data
        raise ValueError(f"task {self.name!r} has no validation split to tune the learning rate on")

    def budget(self, cfg: TaskConfig, data: Any) -> TaskConfig:
        """The config a run trains with, where its budget depends on the data (the LM's ``train.epochs``); else
        ``cfg``."""
        return cfg

    def train_summary(self, cfg: TaskConfig, data: Any) -> dict[str, float]:
        """Extra numbers about a training run (e.g. epochs) for its cost record."""
        return {}

    def paired_records(self, schemes: Sequence[str], seeds: Sequence[int], reference: str,
                       results_root: Path) -> list[dict[str, Any]]:
        """Records comparing each scheme's run with the ``reference`` scheme's run of the same seed, computed from
        the files evaluation wrote under ``results_root`` (translation: sacreBLEU's paired bootstrap); the
        aggregate stage adds them to the study's records. None by default."""
        return []

    def statement(self) -> dict[str, Any]:
        """What the task says of itself in the report, as plain data the aggregate stage writes into
        reports/study.json (``task_statements``; the report runs no task code): the length tasks give their problem's
        name, statement and whether it is a retrieval task. Empty by default. Only the aggregate stage runs it
        (``closure.AGGREGATION_METHODS``): editing it retrains nothing."""
        return {}

    def plots(self) -> dict[str, tuple[str, str, str]]:
        """The curves `dvc plots show` draws for this task: {file suffix: (curve, title, y label)}, each curve the
        mean over seeds that the aggregate stage writes to reports/plots/<task>_<suffix>.csv. None by default: the
        plots are listed in dvc.yaml whatever params run, and a plot whose task is not run is a file DVC misses
        (`dvc plots show --json` then reports an error), so copy and translation, run by every profile, declare
        theirs; every run's curves are in reports/plots/curves_per_seed.csv and dvclive/ whatever a task declares."""
        return {}

