"""The copy task's results: the comparison table, readings, all-pairs matrix, n per length, figures, cost."""

from __future__ import annotations

import pandas as pd

from pelab.analysis.t5_buckets import resolution_sentence
from pelab.report import copy_figures
from pelab.report.context import ReportContext
from pelab.report.tables import (
    best_scheme,
    comparison_table,
    cost_table,
    difference_matrix,
    markdown_table,
    seed_values,
)
from pelab.stats import summarize

COPY_COLUMNS = [
    ("test", "exact_match", "exact match"),
    ("test", "token_accuracy", "token acc."),
    ("test_long", "exact_match", "exact match, longer"),
    ("test_long", "token_accuracy", "token acc., longer"),
]


def copy_reading(records: pd.DataFrame, schemes: list[str]) -> str:
    """Sentences written from the numbers: who solves the task, who fails, who extrapolates."""
    def mean(scheme: str, split: str, metric: str = "exact_match") -> float:
        return summarize(seed_values(records, "copy", scheme, split, metric))["mean"]

    solved = [s for s in schemes if mean(s, "test") >= 0.99]
    failed = [s for s in schemes if mean(s, "test") < 0.5]
    best_long = best_scheme(records, "copy", schemes, "test_long", "token_accuracy")
    parts = []
    if solved:
        parts.append(f"{len(solved)} of {len(schemes)} schemes solve the copy task (mean exact match ≥ 0.99): "
                     + ", ".join(f"`{s}` ({mean(s, 'test'):.3f})" for s in solved) + ".")
    if failed:
        parts.append("Below 0.5 mean exact match: " + ", ".join(f"`{s}` ({mean(s, 'test'):.3f})" for s in failed) + ".")
    if "none" in schemes:
        parts.append(f"Without positions (`none`) the encoder is permutation-equivariant; its token accuracy on the "
                     f"copied part is {mean('none', 'test', 'token_accuracy'):.3f}.")
    parts.append(f"Beyond the training lengths the best token accuracy is `{best_long}`'s "
                 f"({mean(best_long, 'test_long', 'token_accuracy'):.3f}); exact match there is at most "
                 f"{max(mean(s, 'test_long') for s in schemes):.3f}.")
    return " ".join(parts)


ACCURACY, BY_LENGTH, LOSS = "copy_accuracy.png", "copy_accuracy_by_length.png", "copy_training_loss.png"


def _n_per_length(ctx: ReportContext) -> list[str]:
    """Sequences per length in each split of the prepared data (what the per-length numbers average over)."""
    if ctx.data_root is None or not (ctx.data_root / "copy" / "dataset.pt").exists():
        return []
    from pelab.tasks.copy.data import load, sequences_per_length

    data = load(ctx.data_root / "copy")
    counts = {name: sequences_per_length(data[name]) for name in ("train", "test", "test_long")}
    lengths = sorted({n for split in counts.values() for n in split})
    rows = [[str(n), *(str(counts[split].get(n, 0)) for split in counts)] for n in lengths]
    return ["Sequences per length (both splits stratified by length; a length with too few distinct sequences "
            "holds 20% of them out; training batches draw lengths uniformly):", "",
            markdown_table(["length L", "train", "held-out test", "longer test"], rows), ""]


def choices(ctx: ReportContext, task: str, max_offset: int, long_offsets: range | None = None) -> list[str]:
    """The options that could favour one scheme, stated: T5's buckets and the learned table's initial scale."""
    cfg, lines = ctx.cfg(task), []
    if "t5" in ctx.schemes:
        t5 = cfg.options("t5")
        lines.append(resolution_sentence(task, t5.num_buckets, t5.max_distance, range(1, max_offset + 1),
                                         "the offsets the task trains on"))
        if long_offsets is not None:
            lines.append(resolution_sentence(task, t5.num_buckets, t5.max_distance, long_offsets,
                                             "the longer test's copy offsets"))
    if "learned" in ctx.schemes:
        learned = cfg.options("learned")
        lines.append(f"`learned` starts from init `{learned.init}` "
                     + ("(rows at the sinusoidal row norm √(d/2), not GPT-2's std 0.02, which would start 35× "
                        "weaker than the sinusoidal table)" if learned.init == "sinusoidal_norm" else
                        "(GPT-2's std 0.02: rows start ~35× weaker than the sinusoidal table)")
                     + f" and has {learned.max_positions} rows; rows past the training length never receive a "
                     "gradient.")
    return ["**Choices that could favour a scheme.** " + " ".join(lines), ""] if lines else []


def section(ctx: ReportContext) -> list[str]:
    if not ctx.has_task("copy"):
        return []
    records, schemes, copy = ctx.records, ctx.schemes, ctx.copy
    copy_figures.accuracy_by_scheme(records, schemes, ctx.figure(ACCURACY))
    copy_figures.accuracy_by_length(records, schemes, ctx.figure(BY_LENGTH))
    copy_figures.training_curves(ctx.curves, schemes, "copy", ctx.figure(LOSS))
    table, best = comparison_table(records, "copy", schemes, COPY_COLUMNS, reference=ctx.params.reference)
    devices = {s: ctx.run_meta("copy", s, ctx.seed)["cost"]["device"] for s in schemes}
    return [
        "## Copy task",
        "",
        f"Encoder-only: input `d1 … dL <copy> _ …` padded to {copy.data.context} positions, target "
        f"`d1 … dL <copy> d1 … dL _ …`, predicted in one pass. L is {copy.data.min_len}–{copy.data.max_len} in "
        f"training and in the held-out test (sequences never seen in training); the longer test uses "
        f"L = {copy.data.long_min_len}–{copy.data.long_max_len} in {copy.data.long_context} positions. One dataset "
        f"(data seed {copy.data.seed}) serves every scheme and seed; seeds vary the initial weights and batch order. "
        f"Model: {copy.model.n_layers} pre-LN layers, d = {copy.model.d_model}, {copy.model.n_heads} heads, "
        f"FFN {copy.model.d_ff}; {copy.train.steps} AdamW steps of {copy.train.batch_size}, peak lr "
        f"{copy.train.lr:g} (warmup {copy.train.warmup_steps}, cosine decay). Exact match = the whole output row "
        "is right; token accuracy = fraction of the copied digits right.",
        "",
        *_n_per_length(ctx),
        *choices(ctx, "copy", copy.data.max_len + 1, range(copy.data.long_min_len + 1, copy.data.long_max_len + 2)),
        table,
        "",
        copy_reading(records, schemes),
        "",
        "All pairs, exact match on the held-out test (row − column, mean paired difference over seeds "
        "[95% t-interval]):",
        "",
        difference_matrix(records, "copy", schemes, "test", "exact_match"),
        "",
        ctx.image("copy accuracy", ACCURACY),
        "",
        ctx.image("copy accuracy by length", BY_LENGTH),
        "",
        ctx.image("copy training loss", LOSS),
        "",
        "### Cost",
        "",
        cost_table(records, "copy", schemes, devices),
        "",
    ]
