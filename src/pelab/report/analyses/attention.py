"""Attention maps of a trained copy model on the copy-task post's example ``7 1 8 2 <copy> _ _ _ _ _``, as the copy
evaluation captured them (``pelab.probe.captures``), with each model's copy alignment (``pelab.analysis.attention``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from pelab.analysis.attention import copy_alignment
from pelab.report.common import over_seeds
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import save
from pelab.report.tables import markdown_table
from pelab.stats import summarize


def section(ctx: ReportContext) -> list[str]:
    rows, images, mean_alignment = [], [], {}
    for scheme in ctx.schemes:
        alignment, correct, seed_head = [], [], "–"
        for seed in ctx.seeds:
            captured = ctx.captures("copy", scheme, seed)  # written by evaluation: pelab.probe.captures
            if captured is None:
                continue
            labels = captured["labels"]
            n = labels.index("<copy>")  # the example's digits precede the copy token
            weights, predicted = captured["attention"], captured["predicted"]
            per_head = copy_alignment(weights, n)  # (L, H)
            alignment.append(float(per_head.max()))
            correct.append(bool((predicted == captured["target"]).all()))
            if seed == ctx.seed:
                layer, head = divmod(int(per_head.argmax()), per_head.shape[1])
                seed_head = f"layer {layer}, head {head} ({float(per_head.max()):.2f})"
                prediction = " ".join(captured["predicted_labels"])
                draw_attention_grid(weights.numpy(), labels,
                                       f"{scheme} (seed {seed}); model output: {prediction}",
                                       ctx.figure(f"attention_{scheme}.png"))
                images.append(ctx.image(f"attention, {scheme}", f"attention_{scheme}.png"))
        if not alignment:  # evaluation captured nothing for this scheme
            continue
        mean_alignment[scheme] = summarize(alignment)["mean"]
        rows.append([f"`{scheme}`", over_seeds(alignment, 2), seed_head, f"{sum(correct)} / {len(correct)}"])
    header = ["scheme", "copy alignment of the best head", f"best head, seed {ctx.seed}",
              "seeds that copy the example exactly"]
    return render("attention.md", context=ctx.copy.data.context, seed=ctx.seed, images=images,
                  aligned=[s for s, value in mean_alignment.items() if value >= 0.5],
                  diffuse=[s for s, value in mean_alignment.items() if value < 0.25],
                  table=markdown_table(header, rows))


def draw_attention_grid(weights: np.ndarray, labels: list[str], title: str, path: Path) -> Path:
    """weights (L, H, T, T): one panel per layer (rows) and head (columns), tokens as tick labels."""
    n_layers, n_heads, t, _ = weights.shape
    size = max(2.6, 0.17 * t)
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(size * n_heads + 1.0, size * n_layers + 0.8), squeeze=False,
                             layout="constrained")
    for layer in range(n_layers):
        for head in range(n_heads):
            ax = axes[layer, head]
            image = ax.imshow(weights[layer, head], cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ax.grid(False)
            ax.set_xticks(range(t), labels, rotation=90, fontsize=6)
            ax.set_yticks(range(t), labels, fontsize=6)
            ax.set_title(f"layer {layer}, head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel("query", fontsize=8)
            if layer == n_layers - 1:
                ax.set_xlabel("key", fontsize=8)
    fig.colorbar(image, ax=axes, fraction=0.015, pad=0.01, label="attention weight")
    fig.suptitle(title, fontsize=11)
    return save(fig, path)
