"""The LM study behind the ``Task`` interface: what training executes (evaluation: ``evaluate.py``).

A training row is L + 1 consecutive tokens of the training stream (inputs and next-token targets) at an offset
drawn per row, or, for a fixed share of the rows (``lm.train.passkey_share``), a passkey
row of length L + 1 with its key at a uniform depth. The loss is the mean next-token cross-entropy over every
position of every row. The rows and their order depend on the seed only, the same for every scheme.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from pelab.device import autocast
from pelab.model.sequence import SequenceTransformer
from pelab.tasks.base import Batch, Task, TaskConfig, loss_logits
from pelab.tasks.lm import data as lm_data
from pelab.tasks.lm.config import LMDataConfig, LMEvalConfig, LMTrainConfig, ModelConfig
from pelab.tasks.lm.data import LMData
from pelab.tasks.lm.data.passkey import DIGITS, PasskeyFormat, greedy_key, passkey_rows
from pelab.tasks.lm.model import build_lm

VAL_ROWS = 64  # validation windows of length L behind the validation-loss curve
VAL_PASSKEY_ROWS = 16  # passkey rows of length L, depths 0..1, behind the validation passkey curve
VAL_PASSKEY_SEED = 424_242  # their keys: the same rows for every scheme, seed and step
MANY_EPOCHS = 4.0  # passes over the training text beyond which a run says it may memorise it


def lm_loss(model: SequenceTransformer, batch: Batch) -> tuple[torch.Tensor, int]:
    inputs, targets = batch
    logits, _ = model(inputs)  # (B, L, V)
    return F.cross_entropy(loss_logits(logits.flatten(0, 1)), targets.flatten()), targets.numel()


def text_rows(stream: torch.Tensor, starts: torch.Tensor, length: int) -> torch.Tensor:
    """(B, length) windows of ``stream`` starting at ``starts`` (B,)."""
    return stream[starts[:, None] + torch.arange(length)[None, :]]


class LMTask(Task):
    name = "lm"
    sections = {"data": LMDataConfig, "model": ModelConfig, "train": LMTrainConfig, "eval": LMEvalConfig}
    draws_positions = True  # the sequence model asks randomized schemes for its positions
    # graphed on an H200 (full profile): one seed's step 8.1 ms, five stacked 51.9 ms, so five one after another are
    # 1.3x faster (benchmarks/results/gpu_h200_graphs.md); the randomized schemes train eagerly, where stacking pays
    stack_when_graphed = False
    attention_forms = (True,)  # decoder-only
    stack_on_cpu = False  # quick sizes, 2 cores: 5 seeds x 100 steps took 39.5 s stacked, 20 s one after another
    # at_L: evaluated at the training length; at_4L: at four times it (ppl_ratio: its sliding-window perplexity over
    # the one at L; key_ppl_sliding: over the key tokens, key_tokens.py); beyond: passkey accuracy over every length
    # > L and depth (evaluate.py)
    headline = {"at_L": ["ppl_window", "ppl_sliding", "passkey", "passkey_digits"],
                "at_4L": ["ppl_window", "ppl_sliding", "ppl_ratio", "passkey", "key_ppl_sliding"],
                "beyond": ["passkey", "passkey_digits"]}
    key_metrics = {"ppl_L": (("at_L",), "ppl_window"), "ppl_4L": (("at_4L",), "ppl_window"),
                   "ppl_ratio_4L": (("at_4L",), "ppl_ratio"), "passkey_beyond": (("beyond",), "passkey")}
    tunes_on_validation_split = True  # held out from training and from every test set
    ranked_by = ("ppl_4L", False)  # perplexity at 4L: lower is better

    def check_inputs(self, cfg: TaskConfig) -> None:
        from pelab.tasks.lm.data.corpus import check_corpus

        check_corpus(cfg.data.corpus)

    def prepare(self, cfg: TaskConfig, out_dir: Path) -> None:
        lm_data.prepare(cfg.data, out_dir)

    def load_data(self, data_dir: Path) -> LMData:
        return lm_data.load(data_dir)

    def data_info(self, data: LMData) -> dict[str, Any]:
        # max_length: the training rows (the evaluation lengths are checked against every scheme in ``check``)
        return {"vocab_size": data.vocab_size, "context": data.config.context, "max_length": data.config.context}

    def max_length(self, cfg: TaskConfig) -> int:
        return cfg.data.context * max(cfg.eval.multiples)

    def check(self, cfg: TaskConfig) -> None:
        super().check(cfg)
        self.check_recalibration(cfg)
        n = cfg.data.eval_tokens_per_doc
        for k in cfg.eval.multiples:
            window = k * cfg.data.context
            if n % window:
                raise ValueError(f"lm.data.eval_tokens_per_doc={n} must be a multiple of every evaluation length "
                                 f"(lm.data.context × lm.eval.multiples), not of {window}")
            stride = window * cfg.eval.sliding_stride
            if stride != int(stride) or n % int(stride):
                raise ValueError(f"lm.eval.sliding_stride={cfg.eval.sliding_stride}: the stride at length {window} "
                                 f"must be a whole number of tokens that tiles eval_tokens_per_doc")

    def build_model(self, model_cfg: ModelConfig, scheme: str, options: Any, seed: int,
                    info: dict[str, Any]) -> SequenceTransformer:
        return build_lm(scheme, int(info["vocab_size"]), model_cfg, options, seed)

    def batches(self, cfg: TaskConfig, data: LMData, seed: int) -> Callable[[int], Batch]:
        next_rows = self.rows(cfg, data, seed)

        def next_batch(step: int) -> Batch:
            rows = torch.cat([r for r in next_rows(step) if r is not None])  # (B, L + 1)
            return rows[:, :-1], rows[:, 1:]

        return next_batch

    def rows(self, cfg: TaskConfig, data: LMData, seed: int,
             passkey_length: int | None = None) -> Callable[[int], tuple[torch.Tensor, torch.Tensor | None]]:
        """next_rows(step) -> (text rows (B − P, L + 1), passkey rows (P, ``passkey_length``, default L + 1) or None):
        the batch's rows before they are split into inputs and targets (PoSE's fine-tune reads the same draws with
        shorter passkey rows: ``recalibrate.pose_batches``)."""
        order = torch.Generator().manual_seed(seed)
        length, batch_size = cfg.data.context + 1, cfg.train.batch_size
        n_passkey = round(cfg.train.passkey_share * batch_size)
        fmt = PasskeyFormat.of(data.tokenizer)
        fmt.check(cfg.data.context)  # evaluation scores passkey rows of length L whatever the training share
        stream = data.train

        def next_rows(step: int) -> tuple[torch.Tensor, torch.Tensor | None]:
            starts = torch.randint(0, len(stream) - length + 1, (batch_size - n_passkey,), generator=order)
            passkey = None
            if n_passkey:
                depths = torch.rand(n_passkey, generator=order).tolist()
                keys = torch.randint(0, 10, (n_passkey, 5), generator=order).tolist()
                passkey = torch.stack([fmt.row(passkey_length or length, d, k) for d, k in zip(depths, keys)])
            return text_rows(stream, starts, length), passkey

        return next_rows

    def loss(self, cfg: TaskConfig):
        return lm_loss

    def validation(self, cfg: TaskConfig, data: LMData, device: torch.device):
        """``val_loss`` on ``VAL_ROWS`` text windows of the validation documents (what each run's weights are chosen
        on); ``val_passkey``: the share of ``VAL_PASSKEY_ROWS`` passkey rows of length L whose whole key greedy
        decoding writes (a curve only: when retrieval emerges against when the text starts to be memorised)."""
        length = cfg.data.context + 1
        starts = torch.linspace(0, len(data.val) - length, VAL_ROWS).long()
        rows = text_rows(data.val, starts, length).to(device)
        fmt = PasskeyFormat.of(data.tokenizer)
        depths = torch.linspace(0, 1, VAL_PASSKEY_ROWS).tolist()
        keys = passkey_rows(fmt, cfg.data.context, depths, torch.Generator().manual_seed(VAL_PASSKEY_SEED)).to(device)

        @torch.no_grad()
        def val_loss(model: SequenceTransformer) -> dict[str, float]:
            model.eval()
            with autocast(device):
                loss, _ = lm_loss(model, (rows[:, :-1], rows[:, 1:]))
            written, _ = greedy_key(model, keys)
            found = (written == keys[:, -DIGITS:]).all(dim=1).float().mean()
            return {"val_loss": float(loss), "val_passkey": float(found)}

        return val_loss

    def text_tokens_per_step(self, cfg: TaskConfig) -> int:
        """Training-text tokens one step reads: its text rows (not passkey rows) × L."""
        rows = cfg.train.batch_size - round(cfg.train.passkey_share * cfg.train.batch_size)
        return rows * cfg.data.context

    def budget(self, cfg: TaskConfig, data: LMData) -> TaskConfig:
        """``train.epochs`` set: the steps that read the training text that many times. A run that reads it more
        than ``MANY_EPOCHS`` times says so, in one line."""
        per_step = self.text_tokens_per_step(cfg)
        if cfg.train.epochs is not None:
            steps = max(1, math.ceil(cfg.train.epochs * len(data.train) / per_step))
            cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, steps=steps))
        epochs = cfg.train.steps * per_step / len(data.train)
        if epochs > MANY_EPOCHS:
            print(f"note: lm: {cfg.train.steps} steps read the {len(data.train):,} training tokens {epochs:.1f} times; "
                  "the model may memorise its text (each run keeps its best validation step; lm.train.epochs, "
                  "lm.model.dropout, or more text: lm.data.corpus)")
        return cfg

    def train_summary(self, cfg: TaskConfig, data: LMData) -> dict[str, float]:
        return {"epochs": cfg.train.steps * self.text_tokens_per_step(cfg) / len(data.train)}

    def check_recalibration(self, cfg: TaskConfig) -> None:
        e = cfg.eval
        e.check_recalibrated_schemes("lm.eval")
        if e.recalibrate and e.recalibrate_multiple > max(e.multiples):
            raise ValueError(f"lm.eval.recalibrate_multiple={e.recalibrate_multiple} must not exceed the longest "
                             f"evaluation multiple ({max(e.multiples)}, lm.eval.multiples)")


# the registry finds a task package by its TASKS (pelab.tasks)
TASKS = {"lm": LMTask}
