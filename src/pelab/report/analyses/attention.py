"""Attention maps on one copy example (copy-task post), and the attention maps other analyses read.

Attention maps of a trained copy model on the copy-task post's example ``7 1 8 2 <copy> _ _ _ _ _``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.report.common import (
    over_seeds,
)
from pelab.report.context import ReportContext
from pelab.report.style import save
from pelab.report.tables import markdown_table
from pelab.stats import summarize
from pelab.tasks.copy.config import CopyDataConfig as CopyTaskConfig
from pelab.tasks.copy.data import encode_examples
from pelab.tasks.copy.model import CopyTransformer

EXAMPLE_DIGITS = (7, 1, 8, 2)


def token_labels(tokens: torch.Tensor, task: CopyTaskConfig) -> list[str]:
    """Readable labels: digits, ``<copy>`` and ``_`` for padding."""
    return [str(t) if t < task.n_digits else "<copy>" if t == task.copy_token else "_" for t in tokens.tolist()]


def copy_example(task: CopyTaskConfig, digits: tuple[int, ...] = EXAMPLE_DIGITS) -> tuple[torch.Tensor, torch.Tensor]:
    """``digits <copy> _ …`` padded to the trained context: input tokens (T,) and the target row (T,)."""
    example = encode_examples([digits], task.context, task)
    return example.inputs[0], example.targets[0]


@torch.no_grad()
def attention_maps(model: CopyTransformer, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention weights of every layer and head for one input, and the model's prediction.

    tokens: (T,) -> weights (L, H, T, T) (rows: queries, summing to 1), predicted tokens (T,).
    """
    logits, attentions = model.eval()(tokens[None], need_weights=True)
    weights = torch.stack([layer["self"][0] for layer in attentions])  # (L, H, T, T)
    return weights, logits[0].argmax(-1)


def copy_alignment(weights: torch.Tensor, n_digits: int) -> torch.Tensor:
    """Mean attention that output position n+1+i puts on its source digit i, i = 0..n−1: (L, H).

    A head that implements the copy puts all its weight there (1.0); uniform attention gives 1/T.
    """
    queries = torch.arange(n_digits) + n_digits + 1
    sources = torch.arange(n_digits)
    return weights[:, :, queries, sources].mean(-1)


@torch.no_grad()
def seq2seq_attention_maps(model, src: torch.Tensor, tgt_in: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every attention of an encoder-decoder (``pelab.tasks.translation.model.Seq2SeqTransformer``) on one pair.

    src: (S,) source ids; tgt_in: (T,) decoder input ids (``<s> y``, teacher forcing). Returns
    {"encoder self": (L_enc, H, S, S), "decoder self": (L_dec, H, T, T), "cross": (L_dec, H, T, S)}.
    """
    model = model.eval()
    memory, padding, encoder = model.encode(src[None], need_weights=True)
    _, decoder = model.decode(tgt_in[None], memory, padding, need_weights=True)
    return {
        "encoder self": torch.stack([layer["self"][0] for layer in encoder]),
        "decoder self": torch.stack([layer["self"][0] for layer in decoder]),
        "cross": torch.stack([layer["cross"][0] for layer in decoder]),
    }


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
    tokens, target = copy_example(ctx.copy.data)
    labels = token_labels(tokens, ctx.copy.data)
    n = len(EXAMPLE_DIGITS)
    rows, images, mean_alignment = [], [], {}
    for scheme in ctx.schemes:
        alignment, correct = [], []
        for seed in ctx.seeds:
            weights, predicted = attention_maps(ctx.model("copy", scheme, seed), tokens)
            per_head = copy_alignment(weights, n)  # (L, H)
            alignment.append(float(per_head.max()))
            correct.append(bool((predicted == target).all()))
            if seed == ctx.seed:
                layer, head = divmod(int(per_head.argmax()), per_head.shape[1])
                seed_head = f"layer {layer}, head {head} ({float(per_head.max()):.2f})"
                prediction = " ".join(token_labels(predicted, ctx.copy.data))
                draw_attention_grid(weights.numpy(), labels,
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
