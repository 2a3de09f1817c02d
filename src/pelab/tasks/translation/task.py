"""The translation study (French -> English) behind the ``Task`` interface: what training executes.

For one seed, every scheme sees the same batches in the same order, the same dropout stream and the same
initial weights of the shared parameters, so runs pair by seed across schemes. Decoding and scoring live
in ``evaluate.py`` (a dependency of the evaluation stages only).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from pelab.device import autocast
from pelab.tasks.base import Task, TaskConfig, loss_logits
from pelab.tasks.translation import data as translation_data
from pelab.tasks.translation.config import (
    Seq2SeqConfig,
    TranslationDataConfig,
    TranslationEvalConfig,
    TranslationTrainConfig,
)
from pelab.tasks.translation.data import PAD_ID, PreparedTranslation, teacher_forcing_batch
from pelab.tasks.translation.model import Seq2SeqTransformer, build_seq2seq_model

# ---------------------------------------------------------------------------------------------- training


class BucketedBatches:
    """Epochs of shuffled batches of similar-length pairs (less padding); the order depends on the seed only.

    Each epoch: a random permutation, cut into pools of ``pool`` batches, each pool sorted by length and
    cut into batches, and the batches of the epoch shuffled.
    """

    def __init__(self, src: Sequence[list[int]], tgt: Sequence[list[int]], batch_size: int, seed: int, pool: int = 50):
        self.src, self.tgt, self.batch_size, self.pool = src, tgt, batch_size, pool
        self.generator = torch.Generator().manual_seed(seed)
        self.queue: list[list[int]] = []
        self.epochs = 0

    def _epoch(self) -> list[list[int]]:
        perm = torch.randperm(len(self.src), generator=self.generator).tolist()
        size = self.batch_size * self.pool
        batches = []
        for start in range(0, len(perm), size):
            pool = sorted(perm[start : start + size], key=lambda i: (len(self.src[i]), len(self.tgt[i])))
            batches += [pool[j : j + self.batch_size] for j in range(0, len(pool), self.batch_size)]
        order = torch.randperm(len(batches), generator=self.generator).tolist()
        self.epochs += 1
        return [batches[i] for i in order]

    def __call__(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if not self.queue:
            self.queue = self._epoch()[::-1]
        chosen = self.queue.pop()
        return teacher_forcing_batch([self.src[i] for i in chosen], [self.tgt[i] for i in chosen])


def make_loss(label_smoothing: float):
    def loss_fn(model: Seq2SeqTransformer, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        src, tgt_in, tgt_out = batch
        logits = model(src, tgt_in)  # (B, T, V)
        loss = F.cross_entropy(
            loss_logits(logits.flatten(0, 1)), tgt_out.flatten(), ignore_index=PAD_ID, label_smoothing=label_smoothing
        )
        return loss, (tgt_out != PAD_ID).sum()  # a tensor: reading it would sync the device every step

    return loss_fn


@torch.no_grad()
def validation_loss(model: Seq2SeqTransformer, batches: list[tuple[torch.Tensor, ...]], device: torch.device) -> float:
    """Mean per-token cross-entropy (no label smoothing) over the validation batches."""
    model.eval()
    total, count = 0.0, 0
    for src, tgt_in, tgt_out in batches:
        src, tgt_in, tgt_out = src.to(device), tgt_in.to(device), tgt_out.to(device)
        with autocast(device):
            logits = model(src, tgt_in)
        total += float(F.cross_entropy(loss_logits(logits.flatten(0, 1)), tgt_out.flatten(), ignore_index=PAD_ID,
                                       reduction="sum"))
        count += int((tgt_out != PAD_ID).sum())
    return total / max(count, 1)


def validation_batches(data: PreparedTranslation, limit: int | None, batch_size: int) -> list[tuple[torch.Tensor, ...]]:
    src, tgt = data.ids("val", "src_ids"), data.ids("val", "tgt_ids")
    if limit is not None:
        src, tgt = src[:limit], tgt[:limit]
    order = sorted(range(len(src)), key=lambda i: len(src[i]))
    return [
        teacher_forcing_batch([src[i] for i in order[s : s + batch_size]], [tgt[i] for i in order[s : s + batch_size]])
        for s in range(0, len(order), batch_size)
    ]


class TranslationTask(Task):
    name = "translation"
    sections = {"data": TranslationDataConfig, "model": Seq2SeqConfig, "train": TranslationTrainConfig,
                "eval": TranslationEvalConfig}
    batch_padding = (PAD_ID, PAD_ID, PAD_ID)  # (src, tgt_in, tgt_out): masks and the loss ignore <pad>
    # batches take hundreds of (source, target) length shapes, a graph and its memory each: eager (at one shape
    # the graphed step is 1.85x faster, benchmarks/results/gpu_h200_graphs.md; bucketed lengths would let it in)
    graph_steps = False
    _metrics = ["bleu_beam", "chrf_beam", "bleu_greedy", "chrf_greedy"]
    headline = {"test_2016_flickr": _metrics, "test_2017_flickr": _metrics, "test": _metrics, "val": ["loss"]}
    _first = ("test_2016_flickr", "test")  # Multi30k's headline test set, else the corpus' own test split
    key_metrics = {"bleu": (_first, "bleu_beam"), "chrf": (_first, "chrf_beam"),
                   "bleu17": (("test_2017_flickr",), "bleu_beam")}
    tunes_on_validation_split = True  # held out from training and from every test set
    ranked_by = ("bleu", True)

    def check(self, cfg: TaskConfig) -> None:
        from pelab.tasks.translation.data.corpora import EVAL_SPLITS, check_corpus

        check_corpus(cfg.data.corpus)
        super().check(cfg)
        valid = EVAL_SPLITS[cfg.data.corpus]
        unknown = [s for s in cfg.eval.splits or () if s not in valid]
        if unknown:
            raise ValueError(f"unknown translation.eval.splits {unknown} for corpus {cfg.data.corpus!r}; valid "
                             f"choices: {', '.join(valid)}")

    def prepare(self, cfg: TaskConfig, out_dir: Path) -> None:
        translation_data.prepare(cfg.data, out_dir)

    def load_data(self, data_dir: Path) -> PreparedTranslation:
        if not (Path(data_dir) / "meta.json").exists():
            raise FileNotFoundError(f"no prepared translation data at {data_dir}; run `dvc repro prepare@translation`")
        return translation_data.load_prepared(data_dir)

    def data_info(self, data: PreparedTranslation) -> dict[str, Any]:
        return {"vocab_size": data.vocab_size, "max_length": int(data.meta["max_tokens"]) + 1}

    def max_length(self, cfg: TaskConfig) -> int:
        return cfg.data.max_tokens + 1  # a sentence plus </s> (source) or <s> (target)

    def build_model(self, model_cfg: Seq2SeqConfig, scheme: str, options: Any, seed: int,
                    info: dict[str, Any]) -> Seq2SeqTransformer:
        return build_seq2seq_model(scheme, int(info["vocab_size"]), model_cfg, options, seed, pad_id=PAD_ID)

    def batches(self, cfg: TaskConfig, data: PreparedTranslation, seed: int) -> BucketedBatches:
        return BucketedBatches(data.ids("train", "src_ids"), data.ids("train", "tgt_ids"), cfg.train.batch_size, seed)

    def loss(self, cfg: TaskConfig):
        return make_loss(cfg.train.label_smoothing)

    def validation(self, cfg: TaskConfig, data: PreparedTranslation, device: torch.device):
        val = validation_batches(data, cfg.train.val_sentences, max(cfg.train.batch_size, 64))
        return lambda model: {"val_loss": validation_loss(model, val, device)}

    def train_summary(self, cfg: TaskConfig, data: PreparedTranslation) -> dict[str, float]:
        return {"epochs": cfg.train.steps * cfg.train.batch_size / len(data.ids("train", "src_ids"))}

    def paired_records(self, schemes, seeds, reference, results_root):
        from pelab.tasks.translation.paired import bootstrap_records

        return bootstrap_records(schemes, seeds, reference, results_root)

    def plots(self):
        return {"val_loss": ("val_loss", "Translation — validation loss (mean over seeds)",
                             "cross-entropy per target token"),
                "train_loss": ("loss", "Translation — training loss (label-smoothed, mean over seeds)", "cross-entropy")}


# the registry finds a task package by its TASKS (pelab.tasks)
TASKS = {"translation": TranslationTask}
