"""The language-model study's section of the report: perplexity against evaluation length (two protocols),
passkey retrieval by length and depth, the tables at L and 4L with paired tests against the reference scheme,
and a generated reading of which schemes extrapolate and which only look flat.

After Press et al. 2022 (ALiBi, https://arxiv.org/abs/2108.12409, Figure 1: perplexity against evaluation length,
training length marked) and the passkey test of Mohtashami & Jaggi 2023 (https://arxiv.org/abs/2305.16300).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pelab.analysis.paired import seed_summary, seed_values
from pelab.analysis.variants import families, family_rows, variant_bases, with_variants
from pelab.positional import Usage, draws_positions
from pelab.positional.rope_extensions import yarn_attention_factor
from pelab.report.common import scheme_choices, spread_over_seeds
from pelab.report.context import ReportContext
from pelab.report.layouts import layout_reading
from pelab.report.recalibration import lm_measure, recalibration_reading
from pelab.report.render import fill, render, sentences
from pelab.report.style import band, draw_by_length, line_style, palette_with_variants, save, seed_band
from pelab.report.tables import comparison_table, markdown_table
from pelab.report.switches import switch_reading
from pelab.report.theta import lm_theta_reading

TASK = "lm"
PPL_FIGURE, POSITION_FIGURE, PASSKEY_FIGURE = "lm_perplexity_by_length.png", "lm_nll_by_position.png", \
    "lm_passkey.png"
VARIANTS_FIGURE, ABLATION_FIGURE = "lm_variants_by_length.png", "lm_context_ablation.png"
ABLATION = "ablation"  # the context-ablation curve's split (tasks/lm/evaluate.py)
# sliding-window perplexity at 4L over the one at L (every scored token sees at least half a window): "flat" at most
# FLAT, "explodes" at least EXPLODES
FLAT, EXPLODES = 1.10, 2.0


def by_length(records: pd.DataFrame, split: str, metric: str) -> pd.DataFrame:
    rows = records[(records["task"] == TASK) & (records["split"] == split) & (records["metric"] == metric)
                   & (records["length"] != "all")]
    return rows.assign(length=rows["length"].astype(int))


def draw_nll_by_position(records: pd.DataFrame, schemes: list[str], context: int, path: Path) -> Path:
    """Mean NLL at each position of the longest non-overlapping windows (binned): where a scheme breaks."""
    colours = palette_with_variants(schemes)
    rows = by_length(records, "nll_by_position", "nll")
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for scheme in schemes:
        sel = rows[rows["pe"] == scheme]
        if sel.empty:
            continue
        stats = seed_band(sel, "length")
        ax.plot(stats["length"], stats["mean"], color=colours[scheme], lw=1.6, ls=line_style(scheme), label=scheme,
                drawstyle="steps-post")
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


def draw_ablation(records: pd.DataFrame, schemes: list[str], context: int, far: int, path: Path) -> Path:
    """The context-ablation curve (Khandelwal et al. 2018, Figure 1 and 3): the rise in loss at T = ``far`` when the
    context beyond d is dropped (left) or shuffled (right), by d; per scheme the mean over seeds over their min–max."""
    palette = palette_with_variants(schemes)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.9), sharey=True)
    for ax, (metric, title) in zip(axes, (("drop", "only the last d tokens kept"),
                                          ("shuffle", "the tokens beyond d shuffled"))):
        rows = by_length(records, ABLATION, metric)
        for scheme in schemes:
            sel = rows[rows["pe"] == scheme]
            if not sel.empty:
                stats = seed_band(sel, "length")
                band(ax, stats["length"], stats, palette[scheme], scheme, marker="o", ms=3, lw=1.5,
                     ls=line_style(scheme))
        ax.axhline(0.0, color="0.4", lw=0.8)
        ax.axvline(context, color="0.4", ls="--", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("distance d (tokens)")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("rise in NLL (nats)")
    axes[1].legend(fontsize=8, frameon=False, ncol=2)
    fig.suptitle(f"LM: what the context beyond d is worth, read at T = {far} (dashed: L; mean over seeds, band = "
                 "min–max)", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def mean(records: pd.DataFrame, scheme: str, split: str, metric: str) -> float:
    return seed_summary(records, TASK, scheme, split, metric)["mean"]


def reading(records: pd.DataFrame, schemes: list[str], context: int, far: int) -> str:
    """Sentences from the numbers: whose perplexity stays flat to ``far`` tokens, whose explodes, and whether
    flat perplexity comes with retrieval beyond L."""
    ratio = {s: mean(records, s, "at_4L", "ppl_ratio") for s in schemes}
    # against the control, the crop to L of the scheme's runs (every scored token read from exactly L tokens; a
    # variant's runs are its base scheme's), seed by seed
    vs_crop = {s: [far / crop for far, crop in zip(
        seed_values(records, TASK, s, "at_4L", "ppl_sliding"),
        seed_values(records, TASK, f"{s.partition('+')[0]}+crop", "at_4L", "ppl_sliding"))] for s in schemes}
    # flat: every seed within the margin of its own ppl at L and of its own crop, not the mean alone
    worst = {s: max([*seed_values(records, TASK, s, "at_4L", "ppl_ratio"), *vs_crop[s]], default=math.inf)
             for s in schemes}
    at_l = {s: mean(records, s, "at_L", "passkey") for s in schemes}
    beyond = {s: mean(records, s, "beyond", "passkey") for s in schemes}
    flat = [s for s in schemes if worst[s] <= FLAT]
    learned = [s for s in schemes if at_l[s] >= 0.2]
    kept = [s for s in learned if beyond[s] >= 0.5 * at_l[s]]
    names = lambda group, values, form: ", ".join(form.format(s, values[s]) for s in group)  # noqa: E731
    return fill("lm_reading.md", far=far, context=context, flat_limit=f"{FLAT:.2f}", explodes_limit=f"{EXPLODES:g}",
                flat=names(flat, ratio, "`{}` ({:.2f}×)"),
                vs_crop=names([s for s in schemes if vs_crop[s]], {s: float(np.mean(v)) for s, v in vs_crop.items() if v},
                              "`{}` {:.2f}×"),
                explodes=names([s for s in schemes if ratio[s] >= EXPLODES], ratio, "`{}` ({:.2f}×)"),
                digits=names(schemes, {s: mean(records, s, "at_L", "passkey_digits") for s in schemes}, "`{}` {:.2f}"),
                learned=names(learned, at_l, "`{}` ({:.2f})"), kept=names(kept, beyond, "`{}` ({:.2f})"),
                only_flat=names([s for s in flat if s in learned and s not in kept], beyond,
                                "`{}` (passkey beyond L {:.2f})"))


def choices(ctx: ReportContext, schemes: list[str], variants: list[str]) -> list[str]:
    cfg = ctx.cfg(TASK)
    context, longest = cfg.data.context, cfg.data.context * max(cfg.eval.multiples)
    notes = scheme_choices(ctx, TASK, schemes, Usage("the LM study", context, longest, range(1, context)), causal=True)
    factor = longest / context  # the fixed factor of rope+dynamic, +yarn, +llama3 (rope_extensions.Variant)
    return notes + sentences("lm_choices.md", randomized=[s for s in schemes if draws_positions(s)],
                             tempered=[v for v in variants if v.endswith("+logn")],
                             bases=variant_bases(variants), longest=longest, factor=factor,
                             yarn_m=yarn_attention_factor(factor))


def epochs_read(records: pd.DataFrame, schemes: list[str]) -> float | None:
    """How many times each run read its training text (the same for every scheme and seed), None if not recorded."""
    found = records[(records["split"] == "train") & (records["metric"] == "epochs") & records["pe"].isin(schemes)]
    return float(found["value"].mean()) if not found.empty else None


def documents_cut(records: pd.DataFrame) -> int:
    """How many of a folder corpus's files were cut into parts before the split (0 where none, or not recorded)."""
    found = records[(records["split"] == "task") & (records["metric"] == "documents_cut")]["value"]
    return int(found.max()) if not found.empty else 0


def steps_trained(records: pd.DataFrame, configured: int) -> int:
    """The steps the runs trained (``lm.train.epochs`` may set them), else the configured number."""
    found = records[(records["split"] == "train") & (records["metric"] == "steps")]["value"]
    return int(found.max()) if not found.empty else int(configured)


def where_crop_is_a_control(records: pd.DataFrame, context: int, stride: float) -> pd.DataFrame:
    """``records`` without the crop-to-L rows where crop is no control: every non-overlapping window (its first
    tokens read fewer than L tokens, crop's read exactly L) and the sliding window at T where a scored token reads
    fewer than L tokens. A sliding window of T scores its last ``stride``·T tokens, each reading at least
    (1 − stride)·T tokens: from T ≥ L / (1 − stride) on (2L at the default stride 0.5) crop is what reading no
    further than L gives."""
    crop = records["pe"].str.endswith("+crop")
    length = pd.to_numeric(records["length"], errors="coerce")
    # the first scored token reads T − round(stride·T) + 1 tokens (``evaluate.windows``), rounded as it rounds
    short = (records["split"] == "sliding") & ~(length - (length * stride).round() + 1 >= context)
    return records[~(crop & ((records["split"] == "window") | short))]


def section(ctx: ReportContext) -> list[str]:
    if not ctx.has_task(TASK):
        return []
    cfg = ctx.cfg(TASK)
    schemes = list(ctx.params.schemes_of(TASK))
    records, variants = with_variants(ctx.records[ctx.records["task"] == TASK])
    # crop-to-L has perplexity rows only: the same at every T by construction, no passkey, no NLL by position
    readers = schemes + [v for v in variants if not v.endswith("+crop")]
    context = cfg.data.context
    lengths = [k * context for k in cfg.eval.multiples]
    far = 4 * context if 4 * context in lengths else lengths[-1]
    draw_by_length({title: by_length(records, protocol, "ppl") for protocol, title in (
        ("window", "non-overlapping windows"), ("sliding", "sliding window"))}, schemes,
        dict.fromkeys(("non-overlapping windows", "sliding window"), context), ctx.figure(PPL_FIGURE), log=True,
        xlabel="evaluation length T (tokens)", ylabel="test perplexity", title="LM: perplexity against evaluation "
        "length, the trained schemes (line = mean over seeds, band = min–max; dashed = training length L)")
    # each family of evaluation-time variants on its own panel, against its base schemes (sliding window)
    drawn, groups = where_crop_is_a_control(records, context, cfg.eval.sliding_stride), families(variants)
    if groups:
        sliding = by_length(drawn, "sliding", "ppl")
        draw_by_length({title: sliding[sliding["pe"].isin(family_rows(pairs))] for title, pairs in groups.items()},
                       schemes + variants, dict.fromkeys(groups, context), ctx.figure(VARIANTS_FIGURE), log=True,
                       xlabel="evaluation length T (tokens)", ylabel="test perplexity (sliding window)",
                       title="LM: evaluation-time variants against their base schemes (base solid, variants dashed "
                       "or dotted in its colour; crop only where it is a control)")
    draw_nll_by_position(records, schemes, context, ctx.figure(POSITION_FIGURE))
    draw_passkey(records, readers, ctx.figure(PASSKEY_FIGURE))
    reference = ctx.params.reference
    table_l, _ = comparison_table(records, TASK, schemes, [("at_L", "ppl_window", "ppl at L, windows"),
                                                          ("at_L", "ppl_sliding", "ppl at L, sliding")],
                                  digits=2, reference=reference)
    far_columns = [("at_4L", "ppl_window", f"ppl at {far}, windows"), ("at_4L", "ppl_sliding", f"ppl at {far}, sliding"),
                   ("at_4L", "ppl_ratio", f"sliding ppl({far}) / ppl(L)")]
    table_far, _ = comparison_table(records, TASK, schemes, far_columns, digits=2, reference=reference)
    variant_tables = [(title, comparison_table(records, TASK, family_rows(pairs), far_columns[1:], digits=2)[0])
                      for title, pairs in families(variants).items()]
    retrieved = records[records["pe"].isin(readers) & records["split"].isin(["beyond", "at_L"])
                        & (records["metric"] == "passkey") & (records["length"] == "all")]["value"]
    table_passkey, _ = comparison_table(records, TASK, readers, [
        ("beyond", "passkey", "passkey beyond L"), ("at_L", "passkey", "passkey at L"),
        ("beyond", "passkey_digits", "key digits beyond L"), ("at_L", "passkey_digits", "key digits at L")],
        digits=2, reference=reference)
    effective = [[f"`{name}`", spread_over_seeds(seed_values(records, TASK, name, "effective", "tokens"), 0)]
                 for name in readers]
    # key tokens (LongPPL): each scheme and its crop to L, on the same tokens
    key_count = records[(records["split"] == "task") & (records["metric"] == "key_tokens")]["value"]
    with_crop = [name for s in schemes for name in (s, f"{s}+crop") if name == s or name in variants]
    table_key, _ = comparison_table(records, TASK, with_crop, [
        ("at_4L", "key_ppl_sliding", f"key-token ppl at {far}"), ("at_L", "key_ppl_sliding", "key-token ppl at L"),
        ("at_4L", "key_ppl_ratio", f"key ppl({far}) / key ppl(L)"), ("at_4L", "ppl_ratio", "all tokens' ratio")],
        digits=2) if not key_count.empty and key_count.max() > 0 else ("", "")
    ablated = not by_length(records, ABLATION, "drop").empty
    if ablated:
        draw_ablation(records, schemes, context, far, ctx.figure(ABLATION_FIGURE))
    table_ablation, _ = comparison_table(records, TASK, schemes, [
        ("ablation", "drop_beyond_L", "rise, context beyond L dropped"),
        ("ablation", "shuffle_beyond_L", "rise, context beyond L shuffled")], digits=3) if ablated else ("", "")
    tokens = records[(records["split"] == "window") & (records["metric"] == "tokens")]  # the same at every length
    return render(
        "lm.md", model=cfg.model, data=cfg.data, train=cfg.train, context=context, lengths=lengths, far=far,
        epochs=epochs_read(records, schemes), steps=steps_trained(records, cfg.train.steps),
        scored=int(tokens["value"].iloc[0]) if not tokens.empty else 0, stride=cfg.eval.sliding_stride,
        cut=documents_cut(records),
        trials=cfg.eval.passkey_trials, notes=choices(ctx, schemes, variants), table_l=table_l, table_far=table_far,
        table_passkey=table_passkey, threshold=cfg.eval.effective_threshold, variant_tables=variant_tables,
        variants_figure=VARIANTS_FIGURE if groups else None,
        no_retrieval=bool(len(retrieved)) and bool((retrieved == 0).all()),
        effective_table=markdown_table(["scheme", "effective length (tokens)"], effective),
        key_count=int(key_count.max()) if not key_count.empty else None, table_key=table_key,
        thresholds=tuple(ctx.fact(TASK, m, required=False) for m in ("key_alpha", "key_beta")),
        ablation_table=table_ablation,
        ablation_figure=ABLATION_FIGURE if ablated else None, ablation_targets=cfg.eval.ablation_targets,
        distances=sorted(by_length(records, ABLATION, "drop")["length"].unique().tolist()),
        reading=reading(records, readers, context, far),
        recalibration=recalibration_reading(records, variants, lm_measure(far, cfg.eval.recalibrate_multiple),
                                            cfg.eval.recalibrate_multiple, cfg.eval.recalibrate_share),
        layouts=layout_reading(records, cfg, TASK, schemes, "at_4L", "ppl_sliding", f"sliding perplexity at {far}",
                               True, causal=True),
        theta=lm_theta_reading(records, cfg, TASK, schemes, lengths, FLAT),
        switches=switch_reading(records, TASK, schemes, [
            ("at_L", "ppl_sliding", "sliding perplexity at L", True),
            ("at_4L", "ppl_sliding", f"at {far}", True), ("beyond", "passkey", "passkey beyond L", False)]),
        image=ctx.image, ppl_figure=PPL_FIGURE, position_figure=POSITION_FIGURE, passkey_figure=PASSKEY_FIGURE)
