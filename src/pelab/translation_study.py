"""The translation study (French -> English): train one scheme over every seed, evaluate it with BLEU and
chrF under greedy and beam search. The corpus is prepared once by ``tasks.translation_data.prepare``.

Each function is what one DVC stage runs; every path comes from the caller (dvc.yaml). For one seed,
every scheme sees the same batches in the same order, the same dropout stream and the same initial
weights of the shared parameters, so runs pair by seed across schemes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from pelab import io
from pelab.config import Params, to_dict
from pelab.decoding import translate
from pelab.training.accounting import run_cost
from pelab.model.seq2seq import Seq2SeqTransformer, build_seq2seq_model
from pelab.tasks.bleu import sacrebleu_score, score_corpus
from pelab.tasks.translation_data import (
    PAD_ID,
    PreparedTranslation,
    decode,
    load_prepared,
    teacher_forcing_batch,
)
from pelab.training.loop import autocast, pick_device, train
from pelab.training.seeding import seeded

TASK = "translation"


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
    def loss_fn(model: Seq2SeqTransformer, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, int]:
        src, tgt_in, tgt_out = batch
        logits = model(src, tgt_in)  # (B, T, V)
        loss = F.cross_entropy(
            logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=PAD_ID, label_smoothing=label_smoothing
        )
        return loss, int((tgt_out != PAD_ID).sum())

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
        total += float(F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=PAD_ID,
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


def build_and_check(params: Params, scheme: str, seed: int, vocab_size: int) -> Seq2SeqTransformer:
    """Build the model for ``scheme``; fail before training if it cannot encode the training lengths."""
    cfg = params.translation
    model = build_seq2seq_model(scheme, vocab_size, cfg.model, params.positional, seed, pad_id=PAD_ID)
    model.check_length(cfg.data.max_tokens + 1)  # a sentence plus </s> (source) or <s> (target)
    return model


def train_one(
    params: Params, scheme: str, seed: int, data: PreparedTranslation, out_dir: str | Path, device: str = "auto"
) -> None:
    """Train ``scheme`` with ``seed``; write model.pt, history.csv (with val_loss), train_stats.json, config.json."""
    cfg = params.translation
    dev = pick_device(device)
    model = build_and_check(params, scheme, seed, data.vocab_size)
    batches = BucketedBatches(data.ids("train", "src_ids"), data.ids("train", "tgt_ids"), cfg.train.batch_size, seed)
    val = validation_batches(data, cfg.train.val_sentences, max(cfg.train.batch_size, 64))

    def on_log(step: int, m: Seq2SeqTransformer) -> dict[str, float]:
        return {"val_loss": validation_loss(m, val, dev)}

    with seeded(seed):  # the dropout stream
        result = train(
            model, batches, make_loss(cfg.train.label_smoothing), cfg.train, dev,
            desc=f"translation {scheme} seed {seed}", on_log=on_log,
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.cpu().state_dict(), out / "model.pt")
    io.write_csv(out / "history.csv", result.history)
    io.write_json(
        out / "train_stats.json",
        {
            **run_cost(model, result, dev),
            "final_val_loss": result.history[-1]["val_loss"],
            "epochs": cfg.train.steps * cfg.train.batch_size / len(data.ids("train", "src_ids")),
        },
    )
    io.write_json(
        out / "config.json",
        {"task": TASK, "scheme": scheme, "seed": seed, "profile": params.profile,
         "positional": to_dict(params.positional), "translation": to_dict(cfg), "vocab_size": data.vocab_size},
    )


def train_scheme(params: Params, scheme: str, data_dir: str | Path, out_dir: str | Path, device: str = "auto") -> None:
    """Train every seed of ``scheme`` into ``out_dir/seed_<k>/``, replacing ``out_dir`` only on success."""
    data = load_prepared(data_dir)
    for seed in params.seeds:  # validate every seed's model before spending time on any
        build_and_check(params, scheme, seed, data.vocab_size)
    torch.use_deterministic_algorithms(True, warn_only=True)
    with io.atomic_dir(out_dir) as tmp:
        for seed in params.seeds:
            train_one(params, scheme, seed, data, tmp / f"seed_{seed}", device)


def load_trained(params: Params, scheme: str, run_dir: str | Path, seed: int, vocab_size: int) -> Seq2SeqTransformer:
    model = build_seq2seq_model(scheme, vocab_size, params.translation.model, params.positional, seed, pad_id=PAD_ID)
    model.load_state_dict(torch.load(Path(run_dir) / f"seed_{seed}" / "model.pt", weights_only=True))
    return model.eval()


# -------------------------------------------------------------------------------------------- evaluation


def bucket_labels(bounds: Sequence[int]) -> list[str]:
    """Source-length buckets (in words) from their upper bounds: (10, 15) -> ["1-10", "11-15", "16+"]."""
    lows = [1, *(b + 1 for b in bounds)]
    return [f"{lo}-{hi}" for lo, hi in zip(lows, bounds)] + [f"{lows[-1]}+"]


def bucket_of(n_words: int, bounds: Sequence[int]) -> int:
    return next((i for i, bound in enumerate(bounds) if n_words <= bound), len(bounds))


def evaluate_scheme(
    params: Params, scheme: str, data_dir: str | Path, run_dir: str | Path, out_dir: str | Path
) -> None:
    """Write into ``out_dir``:

    * ``records.jsonl``: tidy rows {task, pe, seed, split, length, metric, value}. Per evaluation split and
      decoding (greedy, beam): ``bleu_<decoding>``, ``chrf_…``, ``nltk_bleu_…``, ``nltk_char_bleu_…`` with
      length "all", and ``bleu_<decoding>`` per source-length bucket (length = "1-10", …); the final
      validation loss; each run's training cost and decoding time.
    * ``curves.csv``: training and validation loss per logged step of every seed.
    * ``examples.jsonl``: the translations of ``translation.eval.examples`` (first evaluation split).
    * ``eval_meta.json``: sacreBLEU signatures, decoding settings and how many sentences each decoding scored.
    """
    cfg = params.translation
    data = load_prepared(data_dir)
    bounds, labels = cfg.eval.length_buckets, bucket_labels(cfg.eval.length_buckets)
    rows, curves, examples = [], [], []
    signatures: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = {}
    for seed in params.seeds:
        model = load_trained(params, scheme, run_dir, seed, data.vocab_size)
        for split in data.eval_splits:
            sources, refs, words = data.ids(split, "src_ids"), data.text(split, "en"), data.text(split, "fr")
            n_beam = len(sources) if cfg.decode.beam_sentences is None else min(cfg.decode.beam_sentences, len(sources))
            base = {"task": TASK, "pe": scheme, "seed": seed, "split": split}
            hyps_by_decoding = {}
            for decoding, beam, n in (("greedy", 1, len(sources)), ("beam", cfg.decode.beam_size, n_beam)):
                start = time.perf_counter()
                ids = translate(model, sources[:n], cfg.decode, beam_size=beam,
                                max_positions=params.positional.max_positions)
                elapsed = time.perf_counter() - start
                hyps = decode(data.tokenizer, ids)
                hyps_by_decoding[decoding] = hyps
                counts.setdefault(split, {})[decoding] = n
                scores, signatures = score_corpus(hyps, refs[:n])
                for metric, value in scores.items():
                    rows.append({**base, "length": "all", "metric": f"{metric}_{decoding}", "value": value})
                rows.append({**base, "length": "all", "metric": f"decode_time_s_{decoding}", "value": elapsed})
                buckets = [bucket_of(len(w.split()), bounds) for w in words[:n]]
                for b, label in enumerate(labels):
                    chosen = [i for i, k in enumerate(buckets) if k == b]
                    if chosen:
                        bleu, _ = sacrebleu_score([hyps[i] for i in chosen], [refs[i] for i in chosen])
                        rows.append({**base, "length": label, "metric": f"bleu_{decoding}", "value": bleu})
            if split == data.eval_splits[0]:
                for index in cfg.eval.examples:
                    if index < n_beam:
                        examples.append({"pe": scheme, "seed": seed, "split": split, "index": index,
                                         "source": words[index], "reference": refs[index],
                                         "greedy": hyps_by_decoding["greedy"][index],
                                         "beam": hyps_by_decoding["beam"][index]})
        stats = io.read_json(Path(run_dir) / f"seed_{seed}" / "train_stats.json")
        rows.append({"task": TASK, "pe": scheme, "seed": seed, "split": "val", "length": "all",
                     "metric": "loss", "value": float(stats["final_val_loss"])})
        for metric in ("params_total", "params_without_positional", "wall_time_s", "tokens_per_s", "peak_memory_mb",
                       "final_loss"):
            rows.append({"task": TASK, "pe": scheme, "seed": seed, "split": "train", "length": "all",
                         "metric": metric, "value": float(stats[metric])})
        for row in io.read_csv(Path(run_dir) / f"seed_{seed}" / "history.csv"):
            curves.append({"task": TASK, "pe": scheme, "seed": seed, **row})
    with io.atomic_dir(out_dir) as tmp:
        io.write_jsonl(tmp / "records.jsonl", rows)
        io.write_csv(tmp / "curves.csv", curves)
        io.write_jsonl(tmp / "examples.jsonl", examples)
        io.write_json(tmp / "eval_meta.json", {
            "signatures": signatures, "sentences": counts, "decode": to_dict(cfg.decode),
            "length_buckets": labels, "corpus": data.meta.get("corpus"), "eval_splits": data.eval_splits,
        })
