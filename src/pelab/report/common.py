"""What several report sections share: number formatting and where the copy study's snapshots live."""

from __future__ import annotations

import math
from pathlib import Path

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


def fire_layers(per_layer: bool) -> str:
    """How many FIREs a stack has, for the report's statements of scheme choices."""
    return ("every attention layer has its own FIRE, as in its reference code" if per_layer else
            "one FIRE serves every layer of a stack (`per_layer: false`; its reference code builds one per layer)")
