"""What several report sections share: number formatting and where the copy study's snapshots live."""

from __future__ import annotations

import math

from pelab.analysis import learned_table
from pelab.analysis.schemes import adds_learned_table, describe_scheme
from pelab.positional import Usage
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


def spread_over_seeds(values: list[float], digits: int) -> str:
    """'mean ± sd (min–max)' over seeds, "–" for none (an effective length: its spread, not an interval)."""
    return f"{format_mean_sd(summarize(values), digits)} ({min(values):g}–{max(values):g})" if values else "–"


def table_scheme(ctx: ReportContext, task: str = "copy") -> str | None:
    """The study's first scheme of ``task`` that adds a learned table of positions to the embeddings
    (``adds_learned_table``): the one the references' analyses of a learned table draw, or None."""
    return next((scheme for scheme in ctx.params.schemes_of(task) if adds_learned_table(scheme)), None)


def snapshots(ctx: ReportContext, rows: int, seeds: list[int] | None = None) -> dict[int, learned_table.Snapshots]:
    """{seed: the learned table (``table_scheme``) as training saved it at its checkpoints, its first ``rows``
    positions}, for the copy runs of ``seeds`` (all the study's by default) that saved it; {} where the study has no
    learned table."""
    scheme = table_scheme(ctx)
    paths = {seed: ctx.run_path("copy", scheme, seed) / "position_snapshots.pt"
             for seed in (ctx.seeds if seeds is None else seeds)} if scheme else {}
    return {seed: learned_table.load_snapshots(path, rows=rows) for seed, path in paths.items() if path.exists()}


def sinusoidal_base(ctx: ReportContext, task: str = "copy") -> float:
    """The sinusoidal wavelength base ``task`` used (copy: the task the position-table figures are drawn for)."""
    return ctx.cfg(task).options("sinusoidal").base


def scheme_choices(ctx: ReportContext, task: str, schemes: list[str], usage: Usage, causal: bool = False) -> list[str]:
    """Each scheme's own statement of its setup where ``usage`` says it serves (``describe_scheme``), as
    '`<scheme>`: …' sentences; built from the task's options for it, no weights read."""
    model = ctx.cfg(task).model
    depth = getattr(model, "n_layers", None) or model.encoder_layers  # translation: the encoder's stack
    described = {scheme: describe_scheme(scheme, usage, d_model=model.d_model, n_heads=model.n_heads, causal=causal,
                                         options=ctx.cfg(task).options(scheme), n_layers=depth) for scheme in schemes}
    return [f"`{scheme}`: {text}" for scheme, text in described.items() if text]
