"""Attention maps of a trained copy model on the copy-task post's example ``7 1 8 2 <copy> _ _ _ _ _``, as the copy
evaluation captured them (``pelab.probe.captures``), with each model's copy alignment (``pelab.analysis.attention``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pelab.analysis.attention import copy_alignment
from pelab.report.common import over_seeds
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import Attention, draw_attention
from pelab.report.tables import markdown_table
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    rows, images, mean_alignment = [], [], {}
    for scheme in ctx.schemes_of("copy"):
        found = ctx.captured_seeds("copy", scheme)  # written by evaluation: pelab.probe.captures
        if not found:
            continue
        # (L, H) per seed: the example's digits precede the copy token
        per_head = {seed: copy_alignment(c["attention"], c["labels"].index("<copy>")) for seed, c in found.items()}
        alignment = [float(a.max()) for a in per_head.values()]
        correct = sum(bool((c["predicted"] == c["target"]).all()) for c in found.values())
        seed_head = "–"
        if ctx.seed in found:
            captured, best = found[ctx.seed], per_head[ctx.seed]
            layer, head = divmod(int(best.argmax()), best.shape[1])
            seed_head = f"layer {layer}, head {head} ({float(best.max()):.2f})"
            output = " ".join(captured["predicted_labels"])
            draw_attention_grid(captured["attention"].numpy(), captured["labels"],
                                f"{scheme} (seed {ctx.seed}); model output: {output}",
                                ctx.figure(f"attention_{scheme}.png"))
            images.append(ctx.image(f"attention, {scheme}", f"attention_{scheme}.png"))
        mean_alignment[scheme] = summarize(alignment)["mean"]
        rows.append([f"`{scheme}`", over_seeds(alignment, 2), seed_head, f"{correct} / {len(found)}"])
    header = ["scheme", "copy alignment of the best head", f"best head, seed {ctx.seed}",
              "seeds that copy the example exactly"]
    return render("attention.md", context=ctx.copy.data.context, seed=ctx.seed, images=images,
                  aligned=[s for s, value in mean_alignment.items() if value >= 0.5],
                  diffuse=[s for s, value in mean_alignment.items() if value < 0.25],
                  table=markdown_table(header, rows))


def draw_attention_grid(weights: np.ndarray, labels: list[str], title: str, path: Path) -> Path:
    """weights (L, H, T, T): one panel per layer (rows) and head (columns), tokens as tick labels."""
    n_layers, n_heads, t, _ = weights.shape
    grid = [[Attention(weights[layer, head], labels, labels, f"layer {layer}, head {head}", "query" * (head == 0),
                       "key" * (layer == n_layers - 1)) for head in range(n_heads)] for layer in range(n_layers)]
    return draw_attention(grid, max(2.6, 0.17 * t), title, path)
