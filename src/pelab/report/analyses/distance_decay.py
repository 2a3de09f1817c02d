"""Distance decay, raw and through trained W_q, W_k (translation report, after TENER; ``pelab.analysis.decay``):
evaluation captures the layer-0 scores from every trained copy model (``pelab.probe.captures.layer0_scores``);
this section reads them."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from pelab.analysis.decay import (asymmetry, offsets, relative_only_spread, rope_decay, rope_relative_upper_bound,
                                  scores_by_offset, sinusoidal_decay)
from pelab.report.common import over_seeds, sci, sinusoidal_base
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import save


def section(ctx: ReportContext) -> list[str]:
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, m, c = sinusoidal_base(ctx), ctx.copy.data.long_context, ctx.copy.data.context
    delta = offsets(m).numpy()
    sin_raw = sinusoidal_decay(d, m, base)
    rope_raw = rope_decay(h, m, base)
    bound = rope_relative_upper_bound(h, m, base)
    raw = {
        f"sinusoidal, d = {d}": {"PE(t)·PE(t+Δ)": (delta, (sin_raw / sin_raw[m]).numpy())},
        f"RoPE, head dim {h}": {"⟨R_t 1, R_(t+Δ) 1⟩": (delta, (rope_raw / rope_raw[m]).numpy()),
                               "RoFormer relative upper bound": (delta, (bound / bound[m]).numpy())},
    }
    trained, absolute, rotary = {}, None, None
    if "sinusoidal" in ctx.schemes and ctx.captures("copy", "sinusoidal", ctx.seed) is not None:
        spreads, self_max = [], []
        for seed in ctx.seeds:
            captured = ctx.captures("copy", "sinusoidal", seed)
            if captured is None:
                continue
            scores = captured["layer0_positions"]  # (H, T, T), T = the trained context
            spreads.append(relative_only_spread(scores))
            self_max.append(float((scores.argmax(-1) == torch.arange(c)).float().mean()))
            if seed == ctx.seed:
                dd, mean, low, high = scores_by_offset(scores)
                trained[f"sinusoidal model (seed {seed}), layer 0:\nPE(t) through LayerNorm, W_q, W_k"] = \
                    (dd.numpy(), mean.numpy(), low.numpy(), high.numpy())
        absolute = {"scheme": "sinusoidal", "spread": over_seeds(spreads, 2),
                    "self_max": over_seeds([100 * x for x in self_max], 0, unit="%")}
    if "rope" in ctx.schemes and ctx.captures("copy", "rope", ctx.seed) is not None:
        spreads, peaks = [], []
        for seed in ctx.seeds:
            captured = ctx.captures("copy", "rope", seed)
            if captured is None:
                continue
            scores = captured["layer0_same_token"]  # (H, T, T): each digit at every position, mean over digits
            spreads.append(relative_only_spread(scores))
            dd, mean, low, high = scores_by_offset(scores)
            peaks += [int(dd[i]) for i in mean.argmax(-1)]
            if seed == ctx.seed:
                trained[f"RoPE model (seed {seed}), layer 0:\nsame digit at every position, mean over digits"] = \
                    (dd.numpy(), mean.numpy(), low.numpy(), high.numpy())
        rotary = {"scheme": "rope", "spread": max(spreads), "at_zero": sum(p == 0 for p in peaks), "heads": len(peaks),
                  "elsewhere": ", ".join(str(p) for p in sorted(set(peaks) - {0}))}
    draw_distance_decay(raw, trained, ctx.figure("distance_decay.png"))
    return render("distance_decay.md", sin_asym=sci(asymmetry(sin_raw)), sin_peak=int(delta[sin_raw.argmax()]),
                  rope_asym=sci(asymmetry(rope_raw)), rope_peak=int(delta[rope_raw.argmax()]),
                  bound=float(bound[-1] / bound[m]), m=m, absolute=absolute, rotary=rotary, image=ctx.image)


def draw_distance_decay(
    raw: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]],
    trained: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    path: Path,
) -> Path:
    """Top: raw scores against Δ, normalised by the value at Δ = 0 ({panel: {curve: (Δ, y)}}).
    Bottom: layer-0 scores of trained models ({panel: (Δ, mean (H, K), min, max)}), one line per head
    (mean over t) with a band spanning the values at different t for the same Δ."""
    fig, axes = plt.subplots(2, max(len(raw), len(trained)), figsize=(11, 7.6), squeeze=False)
    for ax, (title, curves) in zip(axes[0], raw.items()):
        for name, (delta, y) in curves.items():
            ax.plot(delta, y, lw=1.4, label=name)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("offset Δ")
        ax.set_ylabel("score / score at Δ = 0")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    for ax, (title, (delta, mean, low, high)) in zip(axes[1], trained.items()):
        for head, color in zip(range(mean.shape[0]), plt.cm.tab10.colors):
            ax.plot(delta, mean[head], lw=1.3, color=color, label=f"head {head}")
            ax.fill_between(delta, low[head], high[head], color=color, alpha=0.15)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("offset Δ = s − t")
        ax.set_ylabel("q_t·k_s / √d_head")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, ncol=2)
    for ax in axes.flat[len(raw) + len(trained):]:
        ax.axis("off")
    fig.tight_layout()
    return save(fig, path)
