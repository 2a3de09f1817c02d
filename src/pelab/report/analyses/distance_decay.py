"""Distance decay, raw and through trained W_q, W_k (translation report, after TENER; ``pelab.analysis.decay``):
evaluation captures the layer-0 scores from every trained copy model (``pelab.probe.captures.layer0_scores``);
this section reads them."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from pelab.analysis.decay import (asymmetry, offsets, peak_offsets, relative_only_spread, rope_decay,
                                  rope_relative_upper_bound, scores_by_offset, self_peak_share, sinusoidal_decay)
from pelab.report.common import over_seeds, sci, sinusoidal_base
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import band, save


def section(ctx: ReportContext) -> list[str]:
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, m = sinusoidal_base(ctx), ctx.copy.data.long_context
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
    found = ctx.captured_seeds("copy", "sinusoidal") if "sinusoidal" in ctx.schemes_of("copy") else {}
    if ctx.seed in found:
        scores = [captured["layer0_positions"] for captured in found.values()]  # (H, T, T), T = the trained context
        trained[f"sinusoidal model (seed {ctx.seed}), layer 0:\nPE(t) through LayerNorm, W_q, W_k"] = \
            tuple(t.numpy() for t in scores_by_offset(found[ctx.seed]["layer0_positions"]))
        absolute = {"scheme": "sinusoidal", "spread": over_seeds([relative_only_spread(x) for x in scores], 2),
                    "self_max": over_seeds([100 * self_peak_share(x) for x in scores], 0, unit="%")}
    found = ctx.captured_seeds("copy", "rope") if "rope" in ctx.schemes_of("copy") else {}
    if ctx.seed in found:
        scores = [captured["layer0_same_token"] for captured in found.values()]  # (H, T, T), mean over digits
        trained[f"RoPE model (seed {ctx.seed}), layer 0:\nsame digit at every position, mean over digits"] = \
            tuple(t.numpy() for t in scores_by_offset(found[ctx.seed]["layer0_same_token"]))
        peaks = [offset for x in scores for offset in peak_offsets(x)]
        rotary = {"scheme": "rope", "spread": max(relative_only_spread(x) for x in scores), "at_zero": peaks.count(0),
                  "heads": len(peaks), "elsewhere": ", ".join(str(p) for p in sorted(set(peaks) - {0}))}
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
            band(ax, delta, {"mean": mean[head], "min": low[head], "max": high[head]}, color, f"head {head}",
                 edge=True, lw=1.3)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("offset Δ = s − t")
        ax.set_ylabel("q_t·k_s / √d_head")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, ncol=2)
    for ax in axes.flat[len(raw) + len(trained):]:
        ax.axis("off")
    fig.tight_layout()
    return save(fig, path)
