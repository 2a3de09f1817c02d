"""LM evaluation: perplexity against length (two protocols) and passkey retrieval, at every T = k·L.

Perplexity is exp of the mean next-token NLL over the same scored tokens for every length and protocol: in each
test speech (``LMData.test``), the N = ``eval_tokens_per_doc`` targets after its first N tokens, each scored
exactly once (``windows``); the first N tokens (N ≥ the longest T) are context only, so that every window lies
inside the speech and no protocol scores a speech's opening:
* ``window`` (non-overlapping): the scored tokens cut into windows of T, each scored in full, so a window's first
  tokens have little context (the "early token curse", Press et al. 2022, https://arxiv.org/abs/2108.12409, §B);
* ``sliding``: blocks of S = ``sliding_stride``·T scored tokens, each read as the last S tokens of a window of T
  ending with it, so every scored token sees at least T − S tokens of context.
``nll_by_position``: the mean NLL at each position of the ``window`` protocol's longest windows, in 16 bins
(where in the window a scheme breaks).

Key tokens (``key_tokens.py``, LongPPL): the scored targets that the text more than L back makes predictable, chosen
once from the prepared text by a position-free evaluator, the same for every scheme and seed; each sliding-window
row also records the perplexity over them (``key_ppl``, ``key_nll``, ``key_tokens``), the summaries
``key_ppl_sliding`` at L and 4L and ``key_ppl_ratio`` (4L over L). The context-ablation curve (``ablation``,
Khandelwal et al. 2018): the rise in loss when the context beyond d is dropped or shuffled, at 4L.

Passkey (``data/passkey.py``): ``passkey_trials`` rows per (length, depth), drawn from a generator seeded by the
length and depth index, so every run and scheme sees the same rows; each cell also records its key ``distance``
(tokens from the key to the answer). ``accuracy``: the share of rows whose whole key greedy decoding writes (for a
randomized scheme at the row's one position draw); ``digit_accuracy``: the share of key digits greedy decoding
writes right, free-running (partial credit, chance 0.1); ``digit_accuracy_teacher_forced``: each digit's argmax
given the true digits before it.

Tidy rows: {split, length, metric, value[, depth]}; splits ``window``, ``sliding``, ``passkey``,
``nll_by_position`` per length, and summaries with length ``all``: ``at_L`` and ``at_4L`` (the largest multiple
when 4 is not evaluated) with ``ppl_window``, ``ppl_sliding``, ``passkey`` (and ``ppl_ratio`` at 4L: its
sliding-window perplexity over the one at L, every scored token seeing at least half a window of context),
``beyond`` (``passkey``, ``passkey_digits`` and ``passkey_digits_teacher_forced`` over every cell whose key is more
than L tokens back, whatever the row's length; the digit shares also at L); split ``task``: ``key_tokens`` (their
count), ``key_share`` and the rule's thresholds ``key_alpha``, ``key_beta``; split ``ablation`` (``ablation``).

A ``rope`` model is also scored with each evaluation-time extension its scheme declares (``positional.variants``:
``rope_extensions.MENU``, HF ``transformers``' names; splits ``<split><suffix>``): ``PI`` (HF ``linear`` at s = T/L) and ``NTK`` (HF ``dynamic``
with factor 1) at every T > L, ``dynamic`` there at the factor that reaches the longest T, ``yarn`` and ``llama3``
at that factor at every T, L included (they change the model within L too). Randomized schemes are
scored at one fixed evaluation draw of positions per length (``RandomizedPositions.sample_positions``; the length
study averages over several draws).
A learned table's rows beyond L are never trained: it is scored with them as they are, as the randomized-PE
study scores its learned baseline.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from pelab.device import autocast
from pelab.model.sequence import SequenceTransformer
from pelab.positional.recalibration import in_place, methods_for
from pelab.positional.temperature import TEMPERATURE
from pelab.positional.variants import evaluation_variants
from pelab.probe import Probe
from pelab.tasks.base import TaskConfig
from pelab.tasks.effective_length import effective_length
from pelab.tasks.lm import recalibrate
from pelab.tasks.lm.data import LMData
from pelab.tasks.lm.data.corpus import PART
from pelab.tasks.lm.data.passkey import DIGITS, PasskeyFormat, greedy_key, passkey_rows
from pelab.tasks.lm.key_tokens import ALPHA, BETA, KeyTokens, key_tokens
from pelab.tasks.lm.task import lm_loss
from pelab.tasks.scoring import Scoring as BaseScoring

POSITION_BINS = 16


def windows(offset: int, n_targets: int, window: int, stride: int) -> list[tuple[int, int]]:
    """(start, first scored index within the window) of each window that scores targets offset..offset+n_targets-1:
    the scored targets in blocks of ``stride``, each the last ``stride`` tokens of a window of ``window`` tokens
    (stride = window: non-overlapping windows scored in full). Each target is scored exactly once; needs
    ``offset >= window - stride`` and ``stride`` dividing ``n_targets`` (the task's config checks both)."""
    return [(offset + block - (window - stride), window - stride) for block in range(0, n_targets, stride)]


@torch.no_grad()
def token_nll(model: SequenceTransformer, rows: torch.Tensor) -> torch.Tensor:
    """rows (B, T + 1) -> (B, T) NLL of each next token given its prefix in the row."""
    with autocast(rows.device):
        logits, _ = model(rows[:, :-1])  # (B, T, V)
    return F.cross_entropy(logits.float().transpose(1, 2), rows[:, 1:], reduction="none")


@torch.no_grad()
def target_nll(model: SequenceTransformer, docs: list[torch.Tensor], window: int, stride: int, batch_size: int,
               device: torch.device, targets: int | None = None) -> tuple[list[torch.Tensor], torch.Tensor]:
    """docs: each 2N + 1 tokens (N its own), the targets after the first N scored (the first ``targets`` of them,
    None: all). Returns per doc the NLL of each scored target in order ((N,) float64, or (targets,)), and the mean
    NLL by position within the window (window,)."""
    spans, out = [], []
    for d, doc in enumerate(docs):
        n = (len(doc) - 1) // 2
        keep = n if targets is None else min(n, targets)
        out.append(torch.zeros(keep, dtype=torch.float64))
        spans += [(d, start, first, min(stride, keep - block), block)
                  for block, (start, first) in zip(range(0, n, stride), windows(n, n, window, stride)) if block < keep]
    by_position = torch.zeros(window, dtype=torch.float64)
    for i in range(0, len(spans), batch_size):
        chunk = spans[i:i + batch_size]
        rows = torch.stack([docs[d][start:start + window + 1] for d, start, _, _, _ in chunk]).to(device)
        nll = token_nll(model, rows).double().cpu()  # (B, window)
        for row, (d, _, first, scored, block) in zip(nll, chunk):
            out[d][block:block + scored] = row[first:first + scored]
        by_position += nll.sum(0)
    return out, by_position / len(spans)


@torch.no_grad()
def perplexity(model: SequenceTransformer, docs: list[torch.Tensor], window: int, stride: int, batch_size: int,
               device: torch.device, targets: int | None = None) -> tuple[float, int, torch.Tensor]:
    """``target_nll`` summed: (mean NLL over the scored targets, their count, mean NLL by position (window,))."""
    nll, by_position = target_nll(model, docs, window, stride, batch_size, device, targets)
    scored = torch.cat(nll)
    return float(scored.sum()) / len(scored), len(scored), by_position


def key_mean(nll: list[torch.Tensor], key: KeyTokens) -> tuple[float, int]:
    """(mean NLL over the key tokens, their count); nan where there are none."""
    picked = torch.cat([row[mask[:len(row)]] for row, mask in zip(nll, key.masks)])
    return (float(picked.mean()) if len(picked) else math.nan), len(picked)


def key_rows(split: str, length: int, nll: list[torch.Tensor], key: KeyTokens | None) -> list[dict[str, Any]]:
    """The key-token perplexity rows of one protocol and length: none without key tokens, their count alone where the
    text has none (a corpus without repeats beyond L: no perplexity to record, and no claim reads one)."""
    if key is None:
        return []
    mean, count = key_mean(nll, key)
    counted = [{"split": split, "length": length, "metric": "key_tokens", "value": count}]
    return counted + ([{"split": split, "length": length, "metric": "key_ppl", "value": math.exp(mean)},
                       {"split": split, "length": length, "metric": "key_nll", "value": mean}] if count else [])


@torch.no_grad()
def passkey_accuracy(model: SequenceTransformer, fmt: PasskeyFormat, length: int, depth: float, trials: int,
                     seed: int, batch_size: int, device: torch.device) -> tuple[float, float, float]:
    """Of ``trials`` rows of ``length`` tokens (key at ``depth``): the share whose whole key greedy decoding writes,
    the share of key digits it writes right (free-running, partial credit; chance 0.1), and the share of digits
    right teacher-forced (each given the true digits before it)."""
    generator = torch.Generator().manual_seed(seed)
    rows = passkey_rows(fmt, length, [depth] * trials, generator)  # (trials, length)
    greedy, forced = [], []
    for i in range(0, trials, batch_size):
        batch = rows[i:i + batch_size].to(device)
        written, teacher = greedy_key(model, batch)
        truth = batch[:, -DIGITS:]
        greedy.append((written == truth).cpu())
        forced.append((teacher == truth).cpu())
    greedy, forced = torch.cat(greedy).float(), torch.cat(forced).float()  # (trials, DIGITS)
    return float(greedy.all(dim=1).float().mean()), float(greedy.mean()), float(forced.mean())


def key_distance(fmt: PasskeyFormat, length: int, depth: float) -> int:
    """Tokens from the key's first digit in the key sentence to the answer's first digit: how far back the key is."""
    return (length - DIGITS) - fmt.key_position(length, depth)


def score(model: SequenceTransformer, cfg: TaskConfig, data: LMData, device: torch.device, suffix: str,
          lengths: list[int], longest: int, key: KeyTokens | None = None) -> list[dict[str, Any]]:
    """The rows of one model (``suffix`` names an evaluation-time variant: "" or a ``MENU`` suffix) at ``lengths``;
    ``nll_by_position`` at the ``longest`` evaluation length; the sliding window's perplexity on the ``key`` tokens
    too (``key_tokens.py``)."""
    rows: list[dict[str, Any]] = []
    fmt = PasskeyFormat.of(data.tokenizer)
    for length in lengths:
        for protocol, stride in (("window", length), ("sliding", round(length * cfg.eval.sliding_stride))):
            per_target, by_position = target_nll(model, data.test, length, stride, cfg.eval.batch_size, device)
            scored = torch.cat(per_target)
            nll, count = float(scored.mean()), len(scored)
            if protocol == "sliding":
                rows += key_rows(protocol + suffix, length, per_target, key)
            rows += [{"split": protocol + suffix, "length": length, "metric": "ppl", "value": math.exp(nll)},
                     {"split": protocol + suffix, "length": length, "metric": "nll", "value": nll},
                     {"split": protocol + suffix, "length": length, "metric": "tokens", "value": count}]
            if protocol == "window" and length == longest:
                bins = by_position.view(POSITION_BINS, -1).mean(1) if length % POSITION_BINS == 0 else by_position
                width = length // len(bins)
                rows += [{"split": "nll_by_position" + suffix, "length": b * width, "metric": "nll", "value": float(v)}
                         for b, v in enumerate(bins)]
        for d, depth in enumerate(cfg.eval.passkey_depths):
            scores = passkey_accuracy(model, fmt, length, depth, cfg.eval.passkey_trials, 1_000_003 * length + d,
                                      cfg.eval.batch_size, device)
            cell = {"split": "passkey" + suffix, "length": length, "depth": depth,
                    "distance": key_distance(fmt, length, depth)}
            rows += [{**cell, "metric": metric, "value": value}
                     for metric, value in zip(("accuracy", "digit_accuracy", "digit_accuracy_teacher_forced"), scores)]
    return rows


def summaries(rows: list[dict[str, Any]], context: int, suffix: str = "",
              threshold: float | None = None) -> list[dict[str, Any]]:
    """The length-``all`` rows: at_L, at_4L (or the largest length), beyond (passkey past L), and with a
    ``threshold`` the effective length (split ``effective``, metric ``tokens``): the longest T up to which passkey
    accuracy, the mean over depths, stays at or above it (``pelab.tasks.effective_length``)."""
    def value(split: str, length: int, metric: str) -> float | None:
        found = [r["value"] for r in rows if r["split"] == split + suffix and r["length"] == length
                 and r["metric"] == metric]
        return found[0] if found else None

    def passkey(keep, metric: str = "accuracy") -> float | None:
        """The mean over the passkey cells whose (length, key distance) ``keep`` accepts."""
        found = [r["value"] for r in rows if r["split"] == "passkey" + suffix and keep(r["length"], r["distance"])
                 and r["metric"] == metric]
        return sum(found) / len(found) if found else None

    lengths = sorted({r["length"] for r in rows if r["split"] == "window" + suffix})
    far = 4 * context if 4 * context in lengths else lengths[-1]
    out = []
    for name, length in (("at_L", context), ("at_4L", far)):
        for metric, v in (("ppl_window", value("window", length, "ppl")),
                          ("ppl_sliding", value("sliding", length, "ppl")),
                          ("key_ppl_sliding", value("sliding", length, "key_ppl")),
                          ("passkey", passkey(lambda t, far, length=length: t == length))):
            if v is not None:
                out.append({"split": name + suffix, "length": "all", "metric": metric, "value": v})
    for metric, ratio in (("ppl", "ppl_ratio"), ("key_ppl", "key_ppl_ratio")):
        at_l, at_far = value("sliding", context, metric), value("sliding", far, metric)
        if at_l is not None and at_far is not None:
            out.append({"split": "at_4L" + suffix, "length": "all", "metric": ratio, "value": at_far / at_l})
    for metric, name in (("accuracy", "passkey"), ("digit_accuracy", "passkey_digits"),
                         ("digit_accuracy_teacher_forced", "passkey_digits_teacher_forced")):
        beyond = passkey(lambda t, far: far > context, metric)  # the key more than L tokens back
        if beyond is not None:
            out.append({"split": "beyond" + suffix, "length": "all", "metric": name, "value": beyond})
        at_l = passkey(lambda t, far: t == context, metric)
        if at_l is not None and metric != "accuracy":
            out.append({"split": "at_L" + suffix, "length": "all", "metric": name, "value": at_l})
    if threshold is not None:
        by_length = {t: passkey(lambda length, far, t=t: length == t) for t in lengths}
        held = effective_length({t: v for t, v in by_length.items() if v is not None}, threshold)
        out.append({"split": "effective" + suffix, "length": "all", "metric": "tokens", "value": float(held)})
    return out


def evaluate(cfg: TaskConfig, model: SequenceTransformer, data: LMData, device: torch.device) -> list[dict[str, Any]]:
    model.to(device).eval()
    context = cfg.data.context
    PasskeyFormat.of(data.tokenizer).check(context)
    lengths = [k * context for k in cfg.eval.multiples]
    key = test_key_tokens(cfg, data)
    rows = score(model, cfg, data, device, "", lengths, lengths[-1], key)
    rows += [{"split": "task", "length": "all", "metric": metric, "value": value}
             for metric, value in (("key_tokens", float(key.count)), ("key_share", key.share),
                                   ("key_alpha", ALPHA), ("key_beta", BETA))]
    # what the report states about the text: how many of a folder's files were cut into parts (corpus.read_folder)
    cut = {name.split(PART)[0] for names in data.meta.get("speeches", {}).values() for name in names if PART in name}
    rows.append({"split": "task", "length": "all", "metric": "documents_cut", "value": float(len(cut))})
    threshold = cfg.eval.effective_threshold
    out = rows + summaries(rows, context, threshold=threshold)
    # the scheme's own (RoPE's extensions); the temperature, where the model attends
    menu = (*evaluation_variants(model.pe), *((TEMPERATURE,) if model.pe.attends else ()))
    for variant in menu:
        scored: list[dict[str, Any]] = []
        for length in [t for t in lengths if t > context or not variant.identity_within]:
            pe = variant.module(model.pe, length, context, lengths[-1]).to(device)
            scored += score(model.with_positional(pe), cfg, data, device, variant.suffix, [length], lengths[-1], key)
        # where the extension is the trained model (rows of at most L tokens) the plain rows stand for it
        at_l = [{**r, "split": r["split"] + variant.suffix} for r in rows if r["length"] == context
                and r["split"] in ("window", "sliding", "passkey")] if variant.identity_within else []
        out += scored + summaries(at_l + scored, context, variant.suffix, threshold)
    cropped = crop(model, cfg, data, device, lengths, key)
    return out + cropped + summaries(cropped, context, CROP) + ablation(model, cfg, data, device)


def test_key_tokens(cfg: TaskConfig, data: LMData) -> KeyTokens:
    """The key tokens of the test speeches (``key_tokens.py``): long context the longest evaluation length, short L;
    a function of the prepared text alone, the same for every scheme and seed."""
    lengths = [k * cfg.data.context for k in cfg.eval.multiples]
    return key_tokens(data.train, data.val, data.test, data.vocab_size, cfg.data.context, lengths[-1])


def evaluate_recalibrated(cfg: TaskConfig, model: SequenceTransformer, data: LMData, device: torch.device,
                          suffix: str) -> list[dict[str, Any]]:
    """A fine-tuned run (``tasks/lm/recalibrate.py``), its method in place: the same grid and summaries as the run,
    under split suffix ``suffix``."""
    model.to(device).eval()
    lengths = [k * cfg.data.context for k in cfg.eval.multiples]
    rows = score(model, cfg, data, device, suffix, lengths, lengths[-1], test_key_tokens(cfg, data))
    return rows + summaries(rows, cfg.data.context, suffix, cfg.eval.effective_threshold)


CROP = "_crop"  # the split suffix of the crop-to-L baseline


@torch.no_grad()
def last_nll(model: SequenceTransformer, rows: list[torch.Tensor], batch_size: int,
             device: torch.device) -> torch.Tensor:
    """rows: each (w + 1,) tokens, rows of one length batched together -> (len(rows),) float64 NLL of each row's last
    token given the w before it, only the last position scored (``last_logits``)."""
    out = torch.zeros(len(rows), dtype=torch.float64)
    for i in range(0, len(rows), batch_size):
        batch = torch.stack(rows[i:i + batch_size]).to(device)  # (B, w + 1)
        with autocast(batch.device):
            logits = model.last_logits(batch[:, :-1])  # (B, V)
        out[i:i + len(batch)] = F.cross_entropy(logits.float(), batch[:, -1], reduction="none").double().cpu()
    return out


@torch.no_grad()
def cropped_nll(model: SequenceTransformer, docs: list[torch.Tensor], window: int, batch_size: int,
                device: torch.device, targets: int | None = None) -> list[torch.Tensor]:
    """docs: each 2N + 1 tokens. Each of the targets after the first N (the first ``targets`` of them, None: all)
    read from exactly the ``window`` tokens before it: one row of ``window`` tokens per target, only its last
    position scored (``last_nll``). The same numbers as ``target_nll`` with stride 1, at about half its cost.
    Returns per doc the NLL of each of its targets."""
    spans = [range((len(doc) - 1) // 2 + 1, len(doc))[:targets] for doc in docs]
    nll = last_nll(model, [doc[t - window:t + 1] for doc, span in zip(docs, spans) for t in span], batch_size, device)
    return list(nll.split([len(span) for span in spans]))


def crop(model: SequenceTransformer, cfg: TaskConfig, data: LMData, device: torch.device,
         lengths: list[int], key: KeyTokens | None = None) -> list[dict[str, Any]]:
    """The crop-to-L control: the better of two reads of every scored token from at most the L tokens before it, at
    positions the model was trained on, so that it is what the run gets from L tokens, never worse than its own
    perplexity at L:
    * ``last``: each target at the last position of a row of exactly the L tokens before it (a sliding window of L
      with stride 1);
    * ``sliding``: each target as the sliding protocol reads it at T = L (the last S = stride·L of an L-token
      window: L − S to L tokens before it).
    The last-position read alone is no control: a model trained on rows of L tokens meets the distance L − 1 once a
    row and mid-row distances up to L times as often, and a RoPE run reads its last position worse than its
    sliding window at L (measured: ``benchmarks/results/crop_control_quick.md``), which would flatter every scheme
    compared with it. The scored tokens are the same at every T (the other protocols' tokens, or the first
    ``lm.eval.crop_targets`` of each speech where set: full_shape), so the control is one number per run, recorded at
    every T under ``window_crop`` and ``sliding_crop``, with both reads at ``at_L_crop`` (``ppl_last``,
    ``ppl_sliding_read``); no passkey: a key more than L tokens back is out of its reach by construction."""
    context, targets = cfg.data.context, cfg.eval.crop_targets
    last = cropped_nll(model, data.test, context, cfg.eval.batch_size, device, targets)
    sliding, _ = target_nll(model, data.test, context, round(context * cfg.eval.sliding_stride),
                            cfg.eval.batch_size, device, targets)
    means = {name: float(torch.cat(read).mean()) for name, read in (("last", last), ("sliding", sliding))}
    chosen = last if means["last"] <= means["sliding"] else sliding  # the better read, on every token alike
    nll, count = min(means.values()), sum(len(row) for row in chosen)
    reads = [{"split": "at_L" + CROP, "length": "all", "metric": metric, "value": math.exp(means[read])}
             for metric, read in (("ppl_last", "last"), ("ppl_sliding_read", "sliding"))]
    return reads + [{"split": protocol + CROP, "length": length, "metric": metric, "value": value}
                    for protocol in ("window", "sliding") for length in lengths
                    for metric, value in (("ppl", math.exp(nll)), ("nll", nll), ("tokens", count))] + \
        [row for length in lengths for row in key_rows("sliding" + CROP, length, chosen, key)]


ABLATION = "ablation"  # the context-ablation curve's split
SHUFFLE_SEED = 2018  # the shuffles' draws: the same for every scheme, seed and run


def ablation_distances(context: int, far: int) -> list[int]:
    """The distances d of the ablation curve: L/4, L/2 (rounded down), L, 2L, 4L, … below ``far``; L always."""
    return sorted({d for d in (context // 4, context // 2, *(context * 2 ** j for j in range(32))) if 0 < d < far})


@torch.no_grad()
def ablation(model: SequenceTransformer, cfg: TaskConfig, data: LMData, device: torch.device) -> list[dict[str, Any]]:
    """The context-ablation curve (Khandelwal et al. 2018, Sharp Nearby, Fuzzy Far Away,
    https://arxiv.org/abs/1805.04623, §4-5: how much a model's loss rises when the context beyond distance d is
    dropped, or kept but shuffled). ``lm.eval.ablation_targets`` targets of each test speech, evenly spaced among its
    scored ones, each read at the last position of a row of the T = 4L tokens before it (the longest T where 4L is not
    evaluated), and at every d of ``ablation_distances``: **drop**, a row of only the last d tokens; **shuffle**, the
    row of T with its first T − d tokens in a random order (one fixed draw per target, the same for every scheme and
    seed), the last d in place. Rows: split ``ablation``, length d, metrics ``drop`` and ``shuffle``: the mean rise in
    NLL over the whole read (nats; 0: the model uses nothing of what was taken); length ``all``: ``nll`` of the whole
    read, ``context`` (T), ``targets``, and the rises at d = L as ``drop_beyond_L`` and ``shuffle_beyond_L``. A
    scheme that reads nothing beyond L has drop ≈ 0 from d = L on; one that reads the far tokens as a bag has
    shuffle ≈ 0 where drop is not."""
    per_doc = cfg.eval.ablation_targets
    if not per_doc:
        return []
    context, batch = cfg.data.context, cfg.eval.batch_size
    lengths = [k * context for k in cfg.eval.multiples]
    far = 4 * context if 4 * context in lengths else lengths[-1]
    distances = ablation_distances(context, far)
    whole, dropped, shuffled = [], {d: [] for d in distances}, {d: [] for d in distances}
    for index, doc in enumerate(data.test):
        n = (len(doc) - 1) // 2
        for target in sorted(set(torch.linspace(n + 1, 2 * n, min(per_doc, n)).round().long().tolist())):
            row = doc[target - far:target + 1]  # (T + 1,) the target last
            whole.append(row)
            generator = torch.Generator().manual_seed(SHUFFLE_SEED + 1_000_003 * index + target)
            for d in distances:
                dropped[d].append(doc[target - d:target + 1])
                head = row[:far - d]
                shuffled[d].append(torch.cat([head[torch.randperm(len(head), generator=generator)], row[far - d:]]))
    full = last_nll(model, whole, batch, device)
    out = [{"split": ABLATION, "length": "all", "metric": metric, "value": value}
           for metric, value in (("nll", float(full.mean())), ("context", float(far)), ("targets", float(len(full))))]
    for d in distances:
        for metric, rows in (("drop", dropped[d]), ("shuffle", shuffled[d])):
            rise = float((last_nll(model, rows, batch, device) - full).mean())
            out.append({"split": ABLATION, "length": d, "metric": metric, "value": rise})
            if d == context:  # the headline: what the tokens beyond L give (drop) and their order (shuffle)
                out.append({"split": ABLATION, "length": "all", "metric": f"{metric}_beyond_L", "value": rise})
    return out


PROBE_ROWS = 4  # test speeches whose opening tokens the per-run probe reads (pelab.probe)


class Scoring(BaseScoring):
    """The LM's scoring (``pelab.tasks.scoring``): perplexity at L..8L, passkey retrieval, the probe, and the
    fine-tunes of finished runs (``tasks/lm/recalibrate.py``)."""

    def recalibrations(self, cfg: TaskConfig, scheme: str) -> list:
        """``lm.eval.recalibrate_methods`` that apply to ``scheme`` (RoPE's extensions only where the scheme has
        them), if ``lm.eval.recalibrate`` lists it (``positional.recalibration.Method``)."""
        return methods_for(cfg, scheme, causal=True)

    def recalibration(self, cfg: TaskConfig, data: LMData, method, seed: int, model: SequenceTransformer):
        """The fine-tune of ``tasks/lm/recalibrate.py``: rows of M·L + 1 tokens from one stream (the same draws for
        every method), PoSE's cut from them."""
        tuning = recalibrate.finetune_config(cfg, method)
        tuned = self.recalibrated_model(cfg, model, method)
        if method.pose:  # its passkey rows at L + 1 tokens: the same keys and depths, the filler shorter
            next_rows = self.task.rows(tuning, data, seed + recalibrate.SEED_OFFSET,
                                       passkey_length=cfg.data.context + 1)
            return tuning, tuned, recalibrate.pose_batches(next_rows, cfg.data.context, seed), recalibrate.pose_loss
        return tuning, tuned, self.task.batches(tuning, data, seed + recalibrate.SEED_OFFSET), lm_loss

    def recalibrated_model(self, cfg: TaskConfig, model: SequenceTransformer, method) -> SequenceTransformer:
        """At s = M for rows of L tokens."""
        return in_place(model, method, cfg.data.context, cfg.eval.recalibrate_multiple)

    def evaluate_recalibrated(self, cfg, model, data, device, suffix):
        return evaluate_recalibrated(cfg, model, data, device, suffix)

    def probe(self, cfg: TaskConfig, data: LMData):
        """The opening tokens of the first test speeches, at every evaluation length (L first)."""
        docs = data.test[:PROBE_ROWS]
        inputs = [torch.stack([doc[:k * cfg.data.context] for doc in docs]) for k in sorted(cfg.eval.multiples)]
        return Probe(cfg.data.context, inputs)

    def evaluate(self, cfg: TaskConfig, model, data, device, out_dir):
        return evaluate(cfg, model, data, device)
