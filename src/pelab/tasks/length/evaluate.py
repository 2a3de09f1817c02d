"""Length-task evaluation: token accuracy and exact match of the answer at every length 1..M.

Encoder: the answer is read at the blank positions of one pass. Decoder: the answer is generated greedily,
one token at a time after the separator (recall: one value after each query), each step reading the model's own
previous outputs (no teacher forcing), so an early mistake counts as it would in use.
Rows: split ``test`` per length; ``in`` (lengths 1..N) and ``beyond`` (N+1..M) as means over their lengths, each
length weighted equally (recall, whose length is its number of key-value pairs, also ``test_spread`` and
``beyond_spread``: N pairs spread over the context of n pairs, n = N+1..M, and ``test_masked``, ``beyond_masked``:
the same rows with the filler hidden from attention, so that only the distance to the pairs grows; ``at_N``: the
test split at n = N, the rows a masked one would be without its filler); ``effective``: the effective length
(RULER's convention, ``effective_length``): the longest n up to which token accuracy stays at or above
``eval.effective_threshold``.

Randomized schemes (``pelab.positional.randomized``) place a row at a sorted subset of positions, drawn once
for the whole row as in training; a generated row keeps its draw, each step reading its prefix. The test
sequences of a length are split into ``eval.position_draws`` groups, group d placed at draw d of that row
length (the randomized-PE reference averages over sub-batches the same way), so one draw's luck does not
decide a length's score, and every run and scheme sees the same draws (runs stay paired).

A ``rope`` model is also scored with each evaluation-time extension its scheme declares (``positional.variants``:
``rope_extensions.MENU``; no retraining; HF ``transformers``' names), for a row of T tokens when the longest trained row had L: ``PI`` (HF ``linear`` at
s = T/L) and ``NTK`` (HF ``dynamic`` with factor 1, i.e. NTK-aware scaling at T/L) beyond N; ``dynamic``, ``yarn``
and ``llama3`` at the factor a user would set to reach the longest evaluated row, ``yarn`` and ``llama3`` at every
length (they change the model within L too), ``dynamic`` beyond N (it equals the trained model within L). Splits
``test<suffix>``, ``in<suffix>``, ``beyond<suffix>``. A recalibrated run (``tasks/length/recalibrate.py``) is scored
on the same grid under its method's suffix (``evaluate_recalibrated``), without the variants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from pelab.device import autocast
from pelab.positional.base import PositionalEncoding
from pelab.positional.randomized import RandomizedPositions
from pelab.positional.recalibration import in_place, methods_for
from pelab.positional.temperature import TEMPERATURE
from pelab.positional.variants import evaluation_variants
from pelab.probe import Probe
from pelab.tasks.base import TaskConfig
from pelab.tasks.effective_length import effective_length
from pelab.tasks.length import recalibrate
from pelab.tasks.length.data import LengthData
from pelab.tasks.length.data.layout import IGNORE, encoder_rows
from pelab.tasks.length.model import LengthTransformer
from pelab.tasks.length.task import length_loss
from pelab.tasks.length.task import rows as task_rows
from pelab.tasks.scoring import Scoring as BaseScoring


def row_positions(model: LengthTransformer, length: int, draw: int, device) -> torch.Tensor | None:
    """(length,) positions of a row: draw ``draw`` of a randomized scheme (fixed per length and draw), else None
    (the model's own 0..length-1)."""
    if isinstance(model.pe, RandomizedPositions):
        return model.pe.sample_positions(length, device, draw=draw)
    return None


@torch.no_grad()
def predict_encoder(model: LengthTransformer, tokens: torch.Tensor, positions: torch.Tensor | None,
                    hidden: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T) rows with blank answer slots, positions (T,) or None, hidden (B, T) or None (the tokens hidden from
    attention) -> (B, T) argmax predictions."""
    with autocast(tokens.device):
        return model(tokens, positions=positions, hidden=hidden)[0].argmax(-1)


@torch.no_grad()
def generate(model: LengthTransformer, prompt: torch.Tensor, n_answer: int,
             positions: torch.Tensor | None = None) -> torch.Tensor:
    """prompt (B, q+1) ending in SEP -> greedy answer (B, n_answer). The prompt in one pass, then one token per
    step with the earlier keys and values cached (``LengthTransformer.extend``): the same logits as a full
    forward over each prefix. ``positions``: the whole row's (at least q + n_answer), each step reading its
    prefix; None: the model's own 0, 1, 2, ..."""
    if positions is None:
        positions = torch.arange(prompt.shape[1] + n_answer, device=prompt.device)
    caches = model.new_caches()
    tokens, end, answer = prompt, prompt.shape[1], []  # end: the tokens so far, with the ones fed this step
    for _ in range(n_answer):
        with autocast(tokens.device):
            tokens = model.extend(tokens, caches, positions[:end])[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        answer.append(tokens)
        end += 1
    return torch.cat(answer, dim=1) if answer else prompt[:, :0]


@torch.no_grad()
def answer_queries(model: LengthTransformer, question: torch.Tensor, answer: torch.Tensor, symbols: int,
                   rows: Callable, positions: torch.Tensor | None = None, hide: Callable | None = None) -> torch.Tensor:
    """Recall's decoder layout (``problems.Recall.rows``: ``context SEP q1 a1 … qm``) -> the values the model
    writes (B, m), each after its own earlier answers, as greedy decoding would write them. A value depends on the
    earlier ones only through the context, so instead of 2m cached steps: read every query in one pass over the
    row holding the current answers (first the true ones), put the predictions in, and repeat until they no longer
    change. A fixed point is the greedy output (value j is then predicted from the model's own values 1..j-1), and
    the loop reaches it within m + 1 passes (each pass fixes at least one more value); two or three in practice.
    ``hide``: tokens -> the tokens hidden from attention (``Problem.hidden``), or None."""
    written = answer
    for _ in range(answer.shape[1] + 1):
        tokens, targets = rows(question, written, symbols, causal=True)
        hidden = None if hide is None else hide(tokens)
        with autocast(tokens.device):
            again = model(tokens, positions=positions, hidden=hidden)[0].argmax(-1)[targets != IGNORE].view_as(answer)
        if torch.equal(again, written):
            break
        written = again
    return written


@torch.no_grad()
def answer_scores(model: LengthTransformer, data: LengthData, sources: torch.Tensor, causal: bool,
                  device: torch.device, batch_size: int,
                  draws: int = 1, masked: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Per example: exact match (whole answer right) and token accuracy (share of answer tokens right). The
    examples are split into ``draws`` groups, group d placed at position draw d (``row_positions``). ``masked``:
    the problem's filler hidden from attention (``Problem.hidden``; recall's spread rows), every token at its
    position."""
    exact, accuracy = [], []
    problem, symbols = data.problem, data.symbols
    hide = (lambda tokens: problem.hidden(tokens, symbols)) if masked else None
    for draw, group in enumerate(torch.tensor_split(sources, min(draws, len(sources)))):
        for start in range(0, len(group), batch_size):
            question, answer = problem.question_answer(group[start:start + batch_size], symbols)
            if causal and problem.interleaved:  # recall, indirect: the answers between the queries
                positions = row_positions(model, problem.rows(question, answer, symbols, True)[0].shape[1], draw,
                                          device)
                predicted = answer_queries(model, question.to(device), answer.to(device), symbols, problem.rows,
                                           positions, hide).cpu()
            elif causal:
                tokens, _ = encoder_rows(question, answer[:, :0], symbols)  # question SEP
                positions = row_positions(model, tokens.shape[1] + answer.shape[1] - 1, draw, device)
                predicted = generate(model, tokens.to(device), answer.shape[1], positions).cpu()
            else:
                tokens, targets = problem.rows(question, answer, symbols, causal=False)
                positions = row_positions(model, tokens.shape[1], draw, device)
                hidden = None if hide is None else hide(tokens).to(device)
                predicted = predict_encoder(model, tokens.to(device), positions, hidden).cpu()
                predicted = predicted[targets != IGNORE].view_as(answer)  # the answer slots, in order
            correct = predicted == answer  # (B, a)
            exact.append(correct.all(dim=1).float())
            accuracy.append(correct.float().mean(dim=1))
    return torch.cat(exact), torch.cat(accuracy)


class Scores:
    """Tidy rows of scores per length, and their means over the lengths of each range (each length weighted
    equally)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.by_range: dict[str, dict[str, list[float]]] = {}

    def record(self, split: str, where: str, n: int, exact: torch.Tensor, accuracy: torch.Tensor,
               *also: str) -> None:
        """Length n's scores under ``split``, counted in range ``where`` (``in``, ``beyond`` + a suffix) and in each
        range of ``also`` (``at_N``)."""
        for metric, values in (("exact_match", exact), ("token_accuracy", accuracy)):
            value = float(values.mean())
            self.rows.append({"split": split, "length": n, "metric": metric, "value": value})
            for range_ in (where, *also):
                self.by_range.setdefault(range_, {}).setdefault(metric, []).append(value)

    def with_ranges(self) -> list[dict[str, Any]]:
        return self.rows + [{"split": where, "length": "all", "metric": metric, "value": sum(values) / len(values)}
                            for where, metrics in self.by_range.items() for metric, values in metrics.items()]


def evaluate(cfg: TaskConfig, model: LengthTransformer, data: LengthData, device: torch.device, *,
             causal: bool, row_length: Callable[[int], int]) -> list[dict[str, Any]]:
    """``row_length(n)``: tokens in a row of input length n (the RoPE extensions scale to it)."""
    model.to(device).eval()
    scores = Scores()
    trained, longest = row_length(data.config.train_max), row_length(data.config.test_max)
    # the scheme's own (RoPE's HF extensions; the remappings are the LM's); the temperature, where the model attends
    menu = (*(v for v in evaluation_variants(model.pe) if v.in_length_study),
            *((TEMPERATURE,) if model.pe.attends else ()))
    # groups of position draws for randomized schemes; one batch per length for the others (same predictions)
    draws = cfg.eval.position_draws if isinstance(model.pe, RandomizedPositions) else 1
    masks = "spread" in data.splits and not reads_content(model)  # recall's masked-distractor axis
    for n, sources in sorted(data.splits["test"].items()):
        where = "in" if n <= data.config.train_max else "beyond"
        at_n = ("at_N",) if n == data.config.train_max and masks else ()  # what a masked row is without its filler
        scores.record("test", where, n, *answer_scores(model, data, sources, causal, device, cfg.eval.batch_size,
                                                       draws=draws), *at_n)
        for variant in menu:
            if where == "beyond" or not variant.identity_within:
                pe = variant.module(model.pe, row_length(n), trained, longest).to(device)
                scores.record(f"test{variant.suffix}", where + variant.suffix, n, *answer_scores(
                    model.with_positional(pe), data, sources, causal, device, cfg.eval.batch_size, draws=draws))
    for n, sources in sorted(data.splits.get("spread", {}).items()):  # recall: N pairs spread over length n
        scores.record(f"test{SPREAD}", f"beyond{SPREAD}", n, *answer_scores(model, data, sources, causal, device,
                                                                             cfg.eval.batch_size, draws=draws))
        if masks:  # the same rows, their filler hidden from attention: only the distance to the pairs grows
            scores.record(f"test{MASKED}", f"beyond{MASKED}", n, *answer_scores(
                model, data, sources, causal, device, cfg.eval.batch_size, draws=draws, masked=True))
    rows = scores.with_ranges()
    axes = [*menu, *([RecallAxis(SPREAD)] if "spread" in data.splits else []), *([RecallAxis(MASKED)] if masks else [])]
    return rows + effective_lengths(rows, axes, data.config.train_max, cfg.eval.effective_threshold) + facts(
        data, causal, row_length)


def evaluate_recalibrated(cfg: TaskConfig, model: LengthTransformer, data: LengthData, device: torch.device,
                          suffix: str, *, causal: bool, row_length: Callable[[int], int]) -> list[dict[str, Any]]:
    """A fine-tuned run (``tasks/length/recalibrate.py``), its method in place, or a run read with a method's module:
    the test split at every length and its ranges, under split suffix ``suffix`` (``test<suffix>``, ``in<suffix>``,
    ``beyond<suffix>``, ``effective<suffix>``); no evaluation-time variants."""
    model.to(device).eval()
    scores = Scores()
    draws = cfg.eval.position_draws if isinstance(model.pe, RandomizedPositions) else 1
    for n, sources in sorted(data.splits["test"].items()):
        where = "in" if n <= data.config.train_max else "beyond"
        scores.record(f"test{suffix}", where + suffix, n, *answer_scores(model, data, sources, causal, device,
                                                                          cfg.eval.batch_size, draws=draws))
    rows = scores.with_ranges()
    accuracy = {r["length"]: r["value"] for r in rows if r["split"] == f"test{suffix}"
                and r["metric"] == "token_accuracy"}
    return rows + [{"split": f"effective{suffix}", "length": "all", "metric": "input_length",
                    "value": float(effective_length(accuracy, cfg.eval.effective_threshold))}]


SPREAD = "_spread"  # the split suffix of recall's second axis: N pairs spread over length n's context
# recall's third: the spread rows with their filler hidden from attention (Du et al. 2025,
# https://arxiv.org/abs/2510.05381, mask the distractors out of attention so that only the distance to the evidence
# grows)
MASKED = "_masked"


@dataclasses.dataclass(frozen=True)
class RecallAxis:
    """One of recall's other axes (``SPREAD``, ``MASKED``) in ``effective_lengths``, like an extension that equals
    the model within N (where its rows are the main axis's: no filler)."""

    suffix: str
    identity_within: bool = True


def reads_content(model: LengthTransformer) -> bool:
    """Whether a layer's positions read the tokens (CoPE's gates, FoX's forget gates: ``content_bias``). Hiding a
    token from attention then changes the positions themselves (the count of gates, the decay), so the
    masked-distractor axis, where only distance may change, is not defined for them and is not scored; nor for a
    model without attention (``mamba``: its recurrence reads every token, none can be hidden)."""
    pe = model.encoder.pe
    return not pe.attends or any(type(pe.layer(i)).content_bias is not PositionalEncoding.content_bias
               for i in range(len(model.encoder.layers)))


def effective_lengths(rows: list[dict[str, Any]], menu, train_max: int, threshold: float) -> list[dict[str, Any]]:
    """Split ``effective<suffix>``, metric ``input_length``: the run's effective length on token accuracy
    (``pelab.tasks.effective_length``), and each extension's (within N the trained model's scores stand for an
    extension that equals it there)."""
    def accuracy(split: str) -> dict[int, float]:
        return {r["length"]: r["value"] for r in rows if r["split"] == split and r["metric"] == "token_accuracy"}

    plain = accuracy("test")
    out = [{"split": "effective", "length": "all", "metric": "input_length",
            "value": float(effective_length(plain, threshold))}]
    for variant in menu:
        scored = accuracy(f"test{variant.suffix}")
        if variant.identity_within:
            scored = {**{n: v for n, v in plain.items() if n <= train_max}, **scored}
        out.append({"split": f"effective{variant.suffix}", "length": "all", "metric": "input_length",
                    "value": float(effective_length(scored, threshold))})
    return out


def facts(data: LengthData, causal: bool, row_length: Callable[[int], int]) -> list[dict[str, Any]]:
    """What the report states about the task itself (it reads records, not the task's code), split ``task``: chance
    per answer symbol, the longest trained and evaluated rows in positions, the attention form (1 causal); where the
    problem has one (recall), its in-context floor (``Problem.in_context_floor``) at each test length (metric
    ``floor``) and averaged over the lengths within and beyond N as the test split's ``in``/``beyond`` rows are
    (``floor_in``, ``floor_beyond``)."""
    cfg = data.config
    values = {"chance": 1.0 / data.problem.answer_alphabet(cfg), "longest_trained_row": row_length(cfg.train_max),
              "longest_eval_row": row_length(cfg.test_max), "causal": float(causal)}
    floors = {n: data.problem.in_context_floor(cfg, n) for n in sorted(data.splits["test"])}
    out = [{"split": "task", "length": "all", "metric": k, "value": float(v)} for k, v in values.items()]
    if all(floor is not None for floor in floors.values()):
        out += [{"split": "task", "length": n, "metric": "floor", "value": float(v)} for n, v in floors.items()]
        for where, lengths in (("in", [n for n in floors if n <= cfg.train_max]),
                               ("beyond", [n for n in floors if n > cfg.train_max])):
            if lengths:
                out.append({"split": "task", "length": "all", "metric": f"floor_{where}",
                            "value": sum(floors[n] for n in lengths) / len(lengths)})
    return out


PROBE_ROWS = 8  # rows per length that the per-run probe reads (pelab.probe)


class Scoring(BaseScoring):
    """The length study's scoring (``pelab.tasks.scoring``): accuracy at every length, the probe, and the fine-tunes of
    finished runs to M·N (``tasks/length/recalibrate.py``)."""

    # ---------------------------------------------------------------------------------- recalibration
    def recalibrations(self, cfg: TaskConfig, scheme: str) -> list:
        """``length.eval.recalibrate_methods`` that apply to ``scheme`` (RoPE's extensions only where the scheme has
        them), if ``length.eval.recalibrate`` lists it."""
        return methods_for(cfg, scheme, causal=self.task.causal)

    def recalibration(self, cfg: TaskConfig, data: LengthData, method, seed: int, model: LengthTransformer):
        """The fine-tune of ``tasks/length/recalibrate.py``: lengths 1..M·N, one stream of picks for every method;
        PoSE's the training lengths at skip-wise positions."""
        tuning = recalibrate.finetune_config(cfg, method)
        tuned = self.recalibrated_model(cfg, model, method)
        if method.pose:
            longest = cfg.eval.recalibrate_multiple * self.task.row_length(cfg.data, cfg.data.train_max)
            short = dataclasses.replace(tuning, data=cfg.data)  # the training lengths, the fine-tune's batch size
            return tuning, tuned, recalibrate.pose_batches(
                self.task.batches(short, data, seed + recalibrate.SEED_OFFSET), longest, seed), recalibrate.pose_loss
        return tuning, tuned, recalibrate.longer_batches(self.task.batches, tuning, data, seed), length_loss

    def recalibration_validation(self, cfg: TaskConfig, data: LengthData, device: torch.device):
        """The validation split's loss at 1..N and on the fine-tune's held-out sequences at N+1..M·N."""
        return self.task.validation(cfg, recalibrate.with_longer_lengths(data, cfg.data.train_max), device)

    def recalibrated_model(self, cfg: TaskConfig, model: LengthTransformer, method) -> LengthTransformer:
        """At s = M for the longest training row (``row_length(N)`` tokens)."""
        return in_place(model, method, self.task.row_length(cfg.data, cfg.data.train_max),
                        cfg.eval.recalibrate_multiple)

    def evaluate_recalibrated(self, cfg, model, data, device, suffix):
        return evaluate_recalibrated(cfg, model, data, device, suffix, causal=self.task.causal,
                                     row_length=lambda n: self.task.row_length(data.config, n))

    # ------------------------------------------------------------------------------------- evaluation
    def probe(self, cfg: TaskConfig, data: LengthData):
        """Test rows at half the longest training length, at it, halfway to the longest test length and at it."""
        n, m = data.config.train_max, data.config.test_max
        lengths = sorted({max(1, n // 2), n, (n + m) // 2, m})
        inputs = [task_rows(data, data.splits["test"][k][:PROBE_ROWS], self.task.causal)[0] for k in lengths]
        return Probe(self.task.row_length(data.config, n), inputs)

    def evaluate(self, cfg: TaskConfig, model, data, device, out_dir):
        return evaluate(cfg, model, data, device, causal=self.task.causal,
                        row_length=lambda n: self.task.row_length(data.config, n))
