"""The length tasks behind the ``Task`` interface: what training executes (evaluation: ``evaluate.py``).

Registry names: ``<problem>`` (bidirectional encoder, answer read at blank positions) and ``<problem>_causal``
(decoder-only, answer generated after the separator), for the problems of ``data/problems/``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from pelab.device import autocast
from pelab.tasks.base import Batch, Task, TaskConfig, loss_logits
from pelab.tasks.length import data as length_data
from pelab.tasks.length.config import LengthDataConfig, LengthEvalConfig, LengthModelConfig, TrainConfig
from pelab.tasks.length.data import LengthData
from pelab.tasks.length.data.layout import IGNORE
from pelab.tasks.length.data.problems import PROBLEMS
from pelab.tasks.length.model import LengthTransformer, build_length_model

VAL_PER_LENGTH = 16  # held-out training sequences per length: the validation split (weights kept on it)


def rows(data: LengthData, sources: torch.Tensor, causal: bool) -> Batch:
    """Sources of one length (B, s) -> (tokens, targets) in the task's layout."""
    question, answer = data.problem.question_answer(sources, data.symbols)
    return data.problem.rows(question, answer, data.symbols, causal)


def length_loss(model: LengthTransformer, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    tokens, targets = batch
    logits, _ = model(tokens)  # (B, T, V)
    n_answer = (targets != IGNORE).sum()  # a tensor: reading it would sync the device every step
    return F.cross_entropy(loss_logits(logits.flatten(0, 1)), targets.flatten(), ignore_index=IGNORE), n_answer


def split_validation(data: LengthData) -> LengthData:
    """Of each training length with at least two sequences, the last fifth (at least one, at most
    ``VAL_PER_LENGTH``) as the split ``val``, the rest as ``train``; the test split as it is. Every run trains and
    selects on this."""
    train, val = {}, {}
    for n, sources in data.splits["train"].items():
        k = min(VAL_PER_LENGTH, max(1, len(sources) // 5)) if len(sources) >= 2 else 0
        train[n] = sources[:len(sources) - k]
        if k:
            val[n] = sources[len(sources) - k:]
    if not val:
        raise ValueError(f"{data.problem.name}: too few training sequences to hold out a validation split; raise "
                         "length.data.n_train")
    return LengthData(data.config, data.problem, {**data.splits, "train": train, "val": val})


class LengthTask(Task):
    """One problem in one architecture; subclasses set ``problem`` and ``causal``."""

    problem: ClassVar[str]
    causal: ClassVar[bool]
    section = "length"  # every length task reads the one ``length:`` block of params
    draws_positions = True  # the sequence model asks randomized schemes for its positions
    sections = {"data": LengthDataConfig, "model": LengthModelConfig, "train": TrainConfig, "eval": LengthEvalConfig}
    # "in": test sequences of the training lengths 1..N (none seen in training); "beyond": lengths N+1..M.
    headline = {"in": ["exact_match", "token_accuracy"], "beyond": ["exact_match", "token_accuracy"]}
    key_metrics = {"exact": (("in",), "exact_match"), "exact_long": (("beyond",), "exact_match"),
                   "token_long": (("beyond",), "token_accuracy")}
    ranked_by = ("token_long", True)

    def prepare(self, cfg: TaskConfig, out_dir: Path) -> None:
        length_data.prepare(self.problem, cfg.data, out_dir)

    def statement(self) -> dict[str, Any]:
        problem = PROBLEMS[self.problem]
        return {"problem": self.problem, "statement": problem.statement, "retrieval": problem.retrieval}

    tunes_on_validation_split = True  # held out from the training sequences, and from every test set

    def load_data(self, data_dir: Path) -> LengthData:
        data = length_data.load(data_dir)
        if data.problem.name != self.problem:
            raise ValueError(f"{data_dir} holds problem {data.problem.name!r}, task {self.name!r} needs {self.problem!r}")
        return split_validation(data)

    def data_info(self, data: LengthData) -> dict[str, Any]:
        return {"vocab_size": data.vocab_size, "max_length": self.row_length(data.config, data.config.test_max),
                "train_max": data.config.train_max, "test_max": data.config.test_max}

    def row_length(self, cfg: LengthDataConfig, n: int) -> int:
        """Tokens in one row of length n: question + SEP + answer slots (encoder) or question + answer (decoder)."""
        problem = PROBLEMS[self.problem]
        return problem.question_length(n) + problem.answer_length(n) + (0 if self.causal else 1)

    def max_length(self, cfg: TaskConfig) -> int:
        return self.row_length(cfg.data, cfg.data.test_max)

    def build_model(self, model_cfg: LengthModelConfig, scheme: str, options: Any, seed: int,
                    info: dict[str, Any]) -> LengthTransformer:
        return build_length_model(scheme, int(info["vocab_size"]), model_cfg, options, seed, causal=self.causal)

    def batches(self, cfg: TaskConfig, data: LengthData, seed: int) -> Callable[[int], Batch]:
        """One length per step, drawn uniformly from 1..N by a schedule that every seed shares (drawn with the data
        seed), so the seeds of a (task, scheme) stack into one vectorised model; then ``batch_size`` of that
        length's training sequences, drawn with replacement by the training seed. Every scheme sees the same
        batches for a seed."""
        schedule = torch.Generator().manual_seed(2**32 + data.config.seed)  # the lengths: one schedule for every seed
        picks = torch.Generator().manual_seed(seed)  # the sequences: the seed's own
        train, lengths = data.splits["train"], sorted(data.splits["train"])

        def next_batch(step: int) -> Batch:
            n = lengths[int(torch.randint(0, len(lengths), (1,), generator=schedule))]
            pick = torch.randint(0, len(train[n]), (cfg.train.batch_size,), generator=picks)
            return rows(data, train[n][pick], self.causal)

        return next_batch

    def loss(self, cfg: TaskConfig):
        return length_loss

    def check(self, cfg: TaskConfig) -> None:
        super().check(cfg)
        e, n = cfg.eval, cfg.data.train_max
        e.check_recalibrated_schemes("length.eval")
        if e.recalibrate and e.recalibrate_multiple * n > cfg.data.test_max:
            raise ValueError(f"length.eval.recalibrate_multiple={e.recalibrate_multiple}: the fine-tune's longest "
                             f"input length {e.recalibrate_multiple * n} (M·N) must not exceed the longest test "
                             f"length (length.data.test_max={cfg.data.test_max})")

    def validation(self, cfg: TaskConfig, data: LengthData, device: torch.device):
        held_out = [rows(data, sources, self.causal) for sources in data.splits["val"].values()]
        held_out = [(tokens.to(device), targets.to(device)) for tokens, targets in held_out]  # moved once

        @torch.no_grad()
        def held_out_loss(model: LengthTransformer) -> dict[str, float]:
            model.eval()
            losses, counts = [], []
            for batch in held_out:
                with autocast(device):
                    loss, n = length_loss(model, batch)
                losses.append(loss)
                counts.append(n)
            total = count = 0.0  # the device read once per validation, not twice per length
            for loss, n in zip(torch.stack(losses).tolist(), torch.stack(counts).tolist()):
                total, count = total + loss * n, count + n
            return {"val_loss": total / count}

        return held_out_loss


def _task_class(problem: str, causal: bool) -> type[LengthTask]:
    name = f"{problem}_causal" if causal else problem
    return type(f"{problem.title()}{'Causal' if causal else ''}Task", (LengthTask,),
                {"name": name, "problem": problem, "causal": causal, "attention_forms": (causal,),
                 "__module__": __name__})


# every problem in both architectures: the bidirectional encoders first, then the decoder-only models
LENGTH_TASKS: dict[str, type[LengthTask]] = {
    task.name: task for causal in (False, True) for task in (_task_class(p, causal) for p in PROBLEMS)}
TASKS = LENGTH_TASKS  # the registry finds a task package by its TASKS (pelab.tasks)
