"""What several report sections share: number formatting and where the copy study's snapshots live."""

from __future__ import annotations

import math
from pathlib import Path

from pelab.positional import Usage, build_positional_encoding
from pelab.report.context import ReportContext
from pelab.stats import format_interval, format_mean_sd, summarize

# The linear-shift notebook's setting: 200 positions, 256 dimensions, shift φ = 100.
NOTEBOOK_LENGTH, NOTEBOOK_DIM, NOTEBOOK_PHI = 200, 256, 100


def sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def mean_sd_sci(summary: dict[str, float]) -> str:
    return f"{summary['mean']:.1e}" + ("" if math.isnan(summary["sd"]) else f" ± {summary['sd']:.1e}")


def over_seeds(values: list[float], digits: int = 3, unit: str = "") -> str:
    """'mean ± sd [95% CI] (n = k)' over seeds, ``unit`` after the mean ± sd."""
    s = summarize(values)
    ci = format_interval(s, digits)
    return f"{format_mean_sd(s, digits)}{unit}" + ("" if ci == "–" else f" {ci}") + f" (n = {s['n']})"


def snapshots_path(ctx: ReportContext, seed: int) -> Path:
    return ctx.run_path("copy", "learned", seed) / "position_snapshots.pt"


def has_snapshots(ctx: ReportContext) -> bool:
    return "learned" in ctx.schemes and snapshots_path(ctx, ctx.seed).exists()


def sinusoidal_base(ctx: ReportContext) -> float:
    """The sinusoidal wavelength base the copy study used."""
    return ctx.copy.options("sinusoidal").base


def scheme_choices(ctx: ReportContext, task: str, schemes: list[str], usage: Usage, causal: bool = False) -> list[str]:
    """Each scheme's own statement of its setup where ``usage`` says it serves (``PositionalEncoding.describe``),
    as '`<scheme>`: …' sentences; built from the task's options for it, no weights read."""
    cfg, sentences = ctx.cfg(task), []
    for scheme in schemes:
        try:
            pe = build_positional_encoding(scheme, d_model=cfg.model.d_model, n_heads=cfg.model.n_heads,
                                           causal=causal, options=cfg.options(scheme))
        except ValueError:  # a scheme of one attention form only (xpos: causal), in a study that has both
            pe = build_positional_encoding(scheme, d_model=cfg.model.d_model, n_heads=cfg.model.n_heads,
                                           causal=not causal, options=cfg.options(scheme))
        text = pe.describe(usage)
        if text:
            sentences.append(f"`{scheme}`: {text}")
    return sentences
