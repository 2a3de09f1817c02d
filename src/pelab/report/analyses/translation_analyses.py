"""The analyses on the translation models: position tables and MDS of the trained learned tables (read from the
runs' weights), and the encoder self, decoder self and cross attention on one sentence (as the translation
evaluation captured it, ``pelab.tasks.translation.evaluate.example_captures``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from pelab.analysis import learned_table
from pelab.analysis.attention import local_mass
from pelab.positional.functional import sinusoidal_table
from pelab.report.analyses.learned_trajectory import draw_mds_and_distances
from pelab.report.analyses.position_tables import draw_position_tables
from pelab.report.common import over_seeds, sinusoidal_base, table_scheme
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.style import Attention, draw_attention
from pelab.report.tables import markdown_table


def translation_schemes(ctx: ReportContext, seed: int) -> list[str]:
    """The schemes with a trained translation model for ``seed``."""
    if "translation" not in ctx.params.tasks:
        return []
    return [s for s in ctx.schemes_of("translation") if ctx.has_run("translation", s, seed)]


def learned_tables(ctx: ReportContext, scheme: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The trained encoder and decoder tables of the scheme's translation run (P, D) each, from its weights."""
    weights = ctx.weights("translation", scheme, seed)
    return weights["encoder.pe.table.weight"], weights["decoder.pe.table.weight"]


def _translation_tables(ctx: ReportContext, schemes: list[str]) -> list[str]:
    scheme = table_scheme(ctx, "translation")
    if scheme not in schemes:
        return render("translation_tables.md", rows=0)
    cfg = ctx.cfg("translation")
    rows = min(cfg.data.max_tokens + 1, cfg.options(scheme).max_positions)
    encoder, decoder = (table[:rows].double() for table in learned_tables(ctx, scheme, ctx.seed))
    sinusoidal = sinusoidal_table(torch.arange(rows, dtype=torch.float64), cfg.model.d_model,
                                  sinusoidal_base(ctx, "translation"))
    draw_position_tables({"sinusoidal": sinusoidal.numpy(), f"{scheme}, encoder (seed {ctx.seed})": encoder.numpy(),
                          f"{scheme}, decoder (seed {ctx.seed})": decoder.numpy()},
                         ctx.figure("translation_pe_tables.png"))
    coords, stress = learned_table.mds_2d(encoder, seed=ctx.seed)
    draw_mds_and_distances(coords, {"encoder": learned_table.offset_distance_curve(encoder),
                                    "decoder": learned_table.offset_distance_curve(decoder)},
                           ctx.figure("translation_learned_mds.png"))
    rho = {"encoder": [], "decoder": []}
    for seed in ctx.seeds:
        if scheme in translation_schemes(ctx, seed):
            tables = learned_tables(ctx, scheme, seed)
            rho["encoder"].append(learned_table.distance_offset_correlation(tables[0][:rows]))
            rho["decoder"].append(learned_table.distance_offset_correlation(tables[1][:rows]))
    return render("translation_tables.md", rows=rows, max_tokens=cfg.data.max_tokens, seed=ctx.seed, stress=stress,
                  rho_encoder=over_seeds(rho["encoder"], 2), rho_decoder=over_seeds(rho["decoder"], 2),
                  image=ctx.image)


def _translation_attention(ctx: ReportContext, schemes: list[str]) -> list[str]:
    rows, images, example = [], [], None
    for scheme in schemes:
        found = {seed: captured for seed, captured in ctx.captured_seeds("translation", scheme).items()
                 if scheme in translation_schemes(ctx, seed)}  # a run of that seed trained: no stale captures
        if not found:
            continue
        example = list(found.values())[-1]
        local = {kind: [float(local_mass(c["attention"][kind]).mean()) for c in found.values()]
                 for kind in ("encoder self", "decoder self")}  # the share within ±1 of the query, per seed
        rows.append([f"`{scheme}`", *(over_seeds(values, 2) for values in local.values())])
        if ctx.seed in found:
            captured, name = found[ctx.seed], f"translation_attention_{scheme}.png"
            draw_seq2seq_attention({k: v.numpy() for k, v in captured["attention"].items()}, captured["src_labels"],
                                   captured["tgt_labels"], f"{scheme} (seed {ctx.seed}), {captured['split']} sentence "
                                   f"{captured['index']}, teacher-forced reference", ctx.figure(name))
            images.append(ctx.image(f"translation attention, {scheme}", name))
    header = ["scheme", "encoder self, within ±1", "decoder self, within ±1"]
    return render("translation_attention.md", example=example, table=markdown_table(header, rows), images=images)


def section(ctx: ReportContext) -> list[str]:
    """The translation report's analyses on this pipeline's translation models; nothing if none were trained."""
    schemes = translation_schemes(ctx, ctx.seed)
    if not schemes:
        return []
    return _translation_tables(ctx, schemes) + _translation_attention(ctx, schemes)


def draw_seq2seq_attention(maps: dict[str, np.ndarray], src_labels: list[str], tgt_labels: list[str], title: str,
                           path: Path) -> Path:
    """Rows: encoder self, decoder self, cross attention; columns: layers; each panel the mean over heads.

    maps: {kind: (L, H, Tq, Tk)}; queries on the y axis, keys on the x axis, tokens as tick labels."""
    sides = {"encoder self": ("source", "source"), "decoder self": ("target", "target"), "cross": ("target", "source")}
    labels = {"source": src_labels, "target": tgt_labels}
    n_layers = max(m.shape[0] for m in maps.values())
    grid = [[Attention(maps[kind][layer].mean(0), labels[sides[kind][0]], labels[sides[kind][1]],
                       f"{kind}, layer {layer} (mean over heads)", f"query ({sides[kind][0]})",
                       f"key ({sides[kind][1]})") if layer < maps[kind].shape[0] else None for layer in range(n_layers)]
            for kind in maps]
    return draw_attention(grid, max(3.0, 0.16 * max(len(src_labels), len(tgt_labels))), title, path)
