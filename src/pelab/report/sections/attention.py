"""Attention maps on one copy example (copy-task post)."""

from __future__ import annotations

from pelab.analysis import attention
from pelab.report import analysis_figures as figures
from pelab.report.context import ReportContext
from pelab.report.sections._shared import (
    over_seeds,
)
from pelab.report.tables import markdown_table
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Attention maps on `7 1 8 2 <copy> _ _ _ _ _` (copy-task post)", ""]
    tokens, target = attention.copy_example(ctx.copy.data)
    labels = attention.token_labels(tokens, ctx.copy.data)
    n = len(attention.EXAMPLE_DIGITS)
    rows, images, mean_alignment = [], [], {}
    for scheme in ctx.schemes:
        alignment, correct = [], []
        for seed in ctx.seeds:
            weights, predicted = attention.attention_maps(ctx.model("copy", scheme, seed), tokens)
            per_head = attention.copy_alignment(weights, n)  # (L, H)
            alignment.append(float(per_head.max()))
            correct.append(bool((predicted == target).all()))
            if seed == ctx.seed:
                layer, head = divmod(int(per_head.argmax()), per_head.shape[1])
                seed_head = f"layer {layer}, head {head} ({float(per_head.max()):.2f})"
                prediction = " ".join(attention.token_labels(predicted, ctx.copy.data))
                figures.attention_grid(weights.numpy(), labels,
                                       f"{scheme} (seed {seed}); model output: {prediction}",
                                       ctx.figure(f"attention_{scheme}.png"))
                images += [ctx.image(f"attention, {scheme}", f"attention_{scheme}.png"), ""]
        mean_alignment[scheme] = summarize(alignment)["mean"]
        rows.append([f"`{scheme}`", over_seeds(alignment, 2), seed_head, f"{sum(correct)} / {len(correct)}"])
    aligned = [f"`{s}`" for s, value in mean_alignment.items() if value >= 0.5]
    diffuse = [f"`{s}`" for s, value in mean_alignment.items() if value < 0.25]
    reading = (
        "Copy alignment is the mean attention weight that output position L+1+i puts on source digit i: 1 for a "
        f"head that implements the copy, 1/{ctx.copy.data.context} for uniform attention. The table gives it for the "
        "best layer and head of each model. "
        + (f"Schemes whose best head aligns (mean ≥ 0.5): {', '.join(aligned)}. " if aligned else
           "No scheme's best head aligns on average (mean ≥ 0.5). ")
        + (f"Diffuse (mean < 0.25): {', '.join(diffuse)}. " if diffuse else "")
        + f"The figures show every layer and head of seed {ctx.seed}'s model; rows are queries, columns keys."
    )
    header = ["scheme", "copy alignment of the best head", f"best head, seed {ctx.seed}",
              "seeds that copy the example exactly"]
    return lines + [reading, "", markdown_table(header, rows), ""] + images
