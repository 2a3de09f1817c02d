"""Attention maps on one copy example (copy-task post), and the attention summaries other analyses read.

Attention maps of a trained copy model on the copy-task post's example ``7 1 8 2 <copy> _ _ _ _ _``, as the
copy evaluation captured them (``pelab.probe.captures``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.report.common import over_seeds
from pelab.report.context import ReportContext
from pelab.report.style import save
from pelab.report.tables import markdown_table
from pelab.stats import summarize


def copy_alignment(weights: torch.Tensor, n_digits: int) -> torch.Tensor:
    """Mean attention that output position n+1+i puts on its source digit i, i = 0..n−1: (L, H).

    A head that implements the copy puts all its weight there (1.0); uniform attention gives 1/T.
    """
    queries = torch.arange(n_digits) + n_digits + 1
    sources = torch.arange(n_digits)
    return weights[:, :, queries, sources].mean(-1)


def local_mass(weights: torch.Tensor, width: int = 1) -> torch.Tensor:
    """Mean over queries of the attention weight on keys within ``width`` positions of the query.

    weights (..., T, T) -> (...): 1 when attention stays on the diagonal band (the C05 report's
    "mainly concentrated on the diagonal"), about (2·width + 1)/T for uniform attention.
    """
    t = weights.shape[-1]
    offsets = torch.arange(t)[None, :] - torch.arange(weights.shape[-2])[:, None]
    return (weights * (offsets.abs() <= width)).sum(-1).mean(-1)


def section(ctx: ReportContext) -> list[str]:
    lines = ["### Attention maps on `7 1 8 2 <copy> _ _ _ _ _` (copy-task post)", ""]
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
                images += [ctx.image(f"attention, {scheme}", f"attention_{scheme}.png"), ""]
        if not alignment:  # evaluation captured nothing for this scheme
            continue
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
