"""Translation evaluation: greedy and beam search, scored with sacreBLEU (signature kept), chrF and NLTK.

Every hypothesis is written to ``hyps/<split>.<decoding>.en`` (detokenized, one per line, in corpus order)
beside ``refs/<split>.en``, so the ``sacrebleu`` command line on those files re-scores the run exactly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pelab import io
from pelab.config import to_dict
from pelab.tasks.base import TaskConfig
from pelab.tasks.translation.bleu import sacrebleu_score, score_corpus
from pelab.tasks.translation.data import BOS_ID, PreparedTranslation, decode
from pelab.tasks.translation.decoding import translate
from pelab.tasks.translation.model import Seq2SeqTransformer
from pelab.tasks.scoring import Scoring as BaseScoring


def bucket_labels(bounds: Sequence[int]) -> list[str]:
    """Source-length buckets (in words) from their upper bounds: (10, 15) -> ["1-10", "11-15", "16+"]."""
    lows = [1, *(b + 1 for b in bounds)]
    return [f"{lo}-{hi}" for lo, hi in zip(lows, bounds)] + [f"{lows[-1]}+"]


def bucket_of(n_words: int, bounds: Sequence[int]) -> int:
    return next((i for i, bound in enumerate(bounds) if n_words <= bound), len(bounds))


@torch.no_grad()
def seq2seq_attention_maps(model: Seq2SeqTransformer, src: torch.Tensor, tgt_in: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every attention of the encoder-decoder on one pair, on the CPU.

    src: (S,) source ids; tgt_in: (T,) decoder input ids (``<s> y``, teacher forcing). Returns
    {"encoder self": (L_enc, H, S, S), "decoder self": (L_dec, H, T, T), "cross": (L_dec, H, T, S)}.
    """
    model = model.eval()
    device = next(model.parameters()).device
    memory, padding, encoder = model.encode(src.to(device)[None], need_weights=True)
    _, decoder = model.decode(tgt_in.to(device)[None], memory, padding, need_weights=True)
    return {
        "encoder self": torch.stack([layer["self"][0].float() for layer in encoder]).cpu(),
        "decoder self": torch.stack([layer["self"][0].float() for layer in decoder]).cpu(),
        "cross": torch.stack([layer["cross"][0].float() for layer in decoder]).cpu(),
    }


def example_captures(cfg: TaskConfig, model: Seq2SeqTransformer, data: PreparedTranslation) -> dict[str, Any]:
    """The attention maps the report draws: the first of ``eval.examples`` in the headline split, its reference
    read by the decoder (teacher forcing), with the tokens' labels and the sentence pair's text."""
    split = data.eval_splits[0]
    index = (cfg.eval.examples or (0,))[0]
    src = torch.tensor(data.ids(split, "src_ids")[index])
    tgt_in = torch.tensor([BOS_ID, *data.ids(split, "tgt_ids")[index]])
    return {"split": split, "index": index, "source": data.text(split, "fr")[index],
            "reference": data.text(split, "en")[index],
            "src_labels": [data.tokenizer.id_to_token(int(i)) for i in src],
            "tgt_labels": [data.tokenizer.id_to_token(int(i)) for i in tgt_in],
            "attention": seq2seq_attention_maps(model, src, tgt_in)}


def model_capacity(model: Seq2SeqTransformer) -> int | None:
    """The longest sequence every positional module of the model can encode (None = unbounded)."""
    limits = [pe.max_positions for pe in model.positional_modules() if hasattr(pe, "max_positions")]
    return min(limits) if limits else None


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    io.write_text_atomic(path, "".join(line.replace("\n", " ") + "\n" for line in lines))


def evaluate(cfg: TaskConfig, model: Seq2SeqTransformer, data: PreparedTranslation, device: torch.device,
             out_dir: Path) -> list[dict[str, Any]]:
    """Rows {split, length, metric, value}. Per evaluation split and decoding (greedy, beam): ``bleu_<decoding>``,
    ``chrf_…``, ``nltk_bleu_beam``, ``nltk_char_bleu_beam``, ``hyp_length_…`` (mean words per hypothesis) with length
    "all", ``bleu_<decoding>`` per source-length bucket (length = "1-10", …) and the decoding time. Also writes
    ``hyps/``, ``refs/``, ``examples.jsonl`` and ``eval_meta.json`` (sacreBLEU signatures, settings, counts)."""
    decode_cfg, bounds = cfg.eval.decode, cfg.eval.length_buckets
    labels = bucket_labels(bounds)
    model.to(device).eval()
    capacity = model_capacity(model)
    rows, examples = [], []
    signatures: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = {}
    splits = [s for s in data.eval_splits if cfg.eval.splits is None or s in cfg.eval.splits]
    for split in splits:
        sources, refs, words = data.ids(split, "src_ids"), data.text(split, "en"), data.text(split, "fr")
        n_beam = len(sources) if decode_cfg.beam_sentences is None else min(decode_cfg.beam_sentences, len(sources))
        _write_lines(out_dir / "refs" / f"{split}.en", refs)
        hyps_by_decoding = {}
        for decoding, beam, n in (("greedy", 1, len(sources)), ("beam", decode_cfg.beam_size, n_beam)):
            start = time.perf_counter()
            ids = translate(model, sources[:n], decode_cfg, beam_size=beam, max_positions=capacity,
                            desc=f"{split} {decoding}")
            elapsed = time.perf_counter() - start
            hyps = decode(data.tokenizer, ids)
            hyps_by_decoding[decoding] = hyps
            _write_lines(out_dir / "hyps" / f"{split}.{decoding}.en", hyps)
            counts.setdefault(split, {})[decoding] = n
            # NLTK's scores (the reference report's comparison) for the beam output only: the report reads no other
            scores, signatures = score_corpus(hyps, refs[:n], nltk=decoding == "beam")
            for metric, value in scores.items():
                rows.append({"split": split, "length": "all", "metric": f"{metric}_{decoding}", "value": value})
            rows.append({"split": split, "length": "all", "metric": f"hyp_length_{decoding}",
                         "value": sum(len(h.split()) for h in hyps) / max(len(hyps), 1)})
            rows.append({"split": split, "length": "all", "metric": f"decode_time_s_{decoding}", "value": elapsed})
            buckets = [bucket_of(len(w.split()), bounds) for w in words[:n]]
            for b, label in enumerate(labels):
                chosen = [i for i, k in enumerate(buckets) if k == b]
                if chosen:
                    bleu, _ = sacrebleu_score([hyps[i] for i in chosen], [refs[i] for i in chosen])
                    rows.append({"split": split, "length": label, "metric": f"bleu_{decoding}", "value": bleu})
        if split == splits[0]:
            for index in cfg.eval.examples:
                if index < n_beam:
                    examples.append({"split": split, "index": index, "source": words[index],
                                     "reference": refs[index], "greedy": hyps_by_decoding["greedy"][index],
                                     "beam": hyps_by_decoding["beam"][index]})
    io.write_jsonl(out_dir / "examples.jsonl", examples)
    io.write_json(out_dir / "eval_meta.json", {
        "signatures": signatures, "sentences": counts, "decode": to_dict(decode_cfg), "length_buckets": labels,
        "corpus": data.meta.get("corpus"), "eval_splits": splits, "max_positions": capacity,
    })
    return rows


class Scoring(BaseScoring):
    """Translation's scoring (``pelab.tasks.scoring``): BLEU and chrF of greedy and beam decoding, the captures."""

    def captures(self, cfg, model, data, device):
        return example_captures(cfg, model, data)

    def evaluate(self, cfg, model, data, device, out_dir):
        return evaluate(cfg, model, data, device, out_dir)
