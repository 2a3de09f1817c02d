"""The report section that reproduces the references' analyses on this pipeline's trained models.

``analysis_section`` computes every number with ``pelab.analysis``, draws the figures with
``pelab.report.analysis_figures`` and writes the readings as sentences built from those numbers.
It reads saved runs (``model.pt``, ``position_snapshots.pt``) and the tidy records only.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from pelab.analysis import attention, distance_decay, learned_table, norms, shift_property, similarity
from pelab.positional.functional import sinusoidal_table
from pelab.report import analysis_figures as figures
from pelab.report.anchors import anchors_table
from pelab.report.tables import markdown_table
from pelab.stats import format_interval, format_mean_sd, summarize
from pelab.report.context import ReportContext
from pelab.tasks.translation.data import BOS_ID

# The linear-shift notebook's setting: 200 positions, 256 dimensions, shift φ = 100.
NOTEBOOK_LENGTH, NOTEBOOK_DIM, NOTEBOOK_PHI = 200, 256, 100
# How the invariants are measured, as written in the table (no "|": it would split a markdown cell).
NORM_MEASURE = "largest abs(‖PE(t)‖ − √(d/2)) over t"
ROPE_MEASURE = "largest (max − min) of the scores along n − m = const, over the largest abs(score)"


def _sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def _mean_sd_sci(summary: dict[str, float]) -> str:
    return f"{summary['mean']:.1e}" + ("" if math.isnan(summary["sd"]) else f" ± {summary['sd']:.1e}")


def _over_seeds(values: list[float], digits: int = 3, unit: str = "") -> str:
    """'mean ± sd [95% CI] (n = k)' over seeds, ``unit`` after the mean ± sd."""
    s = summarize(values)
    ci = format_interval(s, digits)
    return f"{format_mean_sd(s, digits)}{unit}" + ("" if ci == "–" else f" {ci}") + f" (n = {s['n']})"


def _snapshots_path(ctx: ReportContext, seed: int) -> Path:
    return ctx.run_path("copy", "learned", seed) / "position_snapshots.pt"


def _has_snapshots(ctx: ReportContext) -> bool:
    return "learned" in ctx.schemes and _snapshots_path(ctx, ctx.seed).exists()


def _base(ctx: ReportContext) -> float:
    return ctx.copy.options("sinusoidal").base


# 2. Position tables --------------------------------------------------------------------------------
def _tables(ctx: ReportContext) -> list[str]:
    lines = ["### Position tables as heatmaps (translation report)", ""]
    rows = ctx.copy.data.long_context
    tables = {f"sinusoidal (d = {ctx.copy.model.d_model})":
              sinusoidal_table(torch.arange(rows, dtype=torch.float64), ctx.copy.model.d_model,
                               _base(ctx)).numpy()}
    reading = []
    if _has_snapshots(ctx):
        snaps = learned_table.load_snapshots(_snapshots_path(ctx, ctx.seed), rows=rows)
        init, trained = snaps.tables[0], snaps.tables[-1]
        tables[f"learned, initialisation (seed {ctx.seed})"] = init.numpy()
        tables[f"learned, trained {snaps.steps[-1]} steps"] = trained.numpy()
        c = ctx.copy.data.context
        untouched = float((trained[c:] - init[c:]).abs().max())
        reading.append(
            f"Rows are positions 0–{rows - 1}: the model trains on {c} positions and the longer test reads "
            f"{rows}. Training moved the first {c} rows of the learned table from a mean norm of "
            f"{init[:c].norm(dim=1).mean():.2f} to {trained[:c].norm(dim=1).mean():.2f} (a sinusoidal row has "
            f"√(d/2) = {math.sqrt(ctx.copy.model.d_model / 2):.2f}); rows {c}–{rows - 1} never receive a gradient "
            f"and are exactly their initial values (largest change {_sci(untouched)}), which is why `learned` has "
            "nothing to copy with beyond the training length."
        )
    else:
        reading.append("`learned` is not among this run's schemes (or saved no snapshots), so only the "
                       "sinusoidal table is shown.")
    figures.position_tables(tables, ctx.figure("pe_tables.png"), trained_rows=ctx.copy.data.context)
    return lines + [" ".join(reading), "", ctx.image("position tables", "pe_tables.png"), ""]


# 3. Similarity between positions --------------------------------------------------------------------
def _neighbour_cosine(cosine: torch.Tensor) -> float:
    return float(similarity.mean_by_offset(cosine, 1)[1])


def _similarity(ctx: ReportContext) -> list[str]:
    lines = ["### Similarity between positions (copy-task post)", ""]
    c = ctx.copy.data.context
    sinusoidal = sinusoidal_table(torch.arange(c, dtype=torch.float64), ctx.copy.model.d_model,
                                  _base(ctx))
    sims = {}
    if _has_snapshots(ctx):
        snaps = learned_table.load_snapshots(_snapshots_path(ctx, ctx.seed), rows=c)
        sims["learned, initialisation"] = similarity.position_similarity(snaps.tables[0])
        sims[f"learned, trained (seed {ctx.seed})"] = similarity.position_similarity(snaps.tables[-1])
    sims["sinusoidal"] = similarity.position_similarity(sinusoidal)
    figures.similarity_matrices({k: {kind: m.numpy() for kind, m in v.items()} for k, v in sims.items()},
                                ctx.figure("position_similarity.png"))
    neighbour = {name: _neighbour_cosine(m["cosine"]) for name, m in sims.items()}
    far = {name: float(similarity.mean_by_offset(m["cosine"])[c // 2:].mean()) for name, m in sims.items()}
    parts = ["Mean cosine similarity between neighbouring positions (Δ = 1), and averaged over offsets "
             f"Δ ≥ {c // 2}: " + "; ".join(f"{name}: {neighbour[name]:.2f} and {far[name]:.2f}" for name in sims)
             + "."]
    if _has_snapshots(ctx):
        trained = [_neighbour_cosine(similarity.position_similarity(
                       learned_table.load_snapshots(_snapshots_path(ctx, seed), rows=c).tables[-1])["cosine"])
                   for seed in ctx.seeds if _snapshots_path(ctx, seed).exists()]
        closer = summarize(trained)["mean"] > neighbour["learned, initialisation"] + 0.1
        parts.append(f"Over seeds, the trained table's neighbour cosine is {_over_seeds(trained, 2)}: training "
                     + ("makes neighbouring positions similar, as the sinusoidal table is by construction." if closer
                        else "leaves neighbouring positions about as dissimilar as at initialisation."))
    return lines + [" ".join(parts), "", ctx.image("position similarity", "position_similarity.png"), ""]


# 4. The learned table's trajectory and MDS ----------------------------------------------------------
def _offset_distance_curve(table: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """‖PE(i) − PE(j)‖ by offset |i − j| = 1..P−1: offsets, and the mean, min and max over pairs."""
    distances = learned_table.pairwise_distances(table)
    offsets = np.arange(1, distances.shape[0])
    diagonals = [np.diagonal(distances, int(d)) for d in offsets]
    return (offsets, np.array([d.mean() for d in diagonals]), np.array([d.min() for d in diagonals]),
            np.array([d.max() for d in diagonals]))


def _learned_trajectory(ctx: ReportContext) -> list[str]:
    lines = ["### The learned table during training: PCA trajectory (copy-task post) and MDS (translation report)", ""]
    if not _has_snapshots(ctx):
        return lines + ["`learned` is not among this run's schemes or saved no snapshots "
                        "(`copy.train.checkpoints` = 0); nothing to draw.", ""]
    c = ctx.copy.data.context
    snaps = learned_table.load_snapshots(_snapshots_path(ctx, ctx.seed), rows=c)
    traj = learned_table.pca_trajectory(snaps)
    figures.pca_small_multiples(traj.steps, traj.coords, traj.explained, ctx.figure("learned_pca.png"))
    figures.pca_gif(traj.steps, traj.coords, traj.explained, ctx.figure("learned_pca.gif"))
    coords, stress = learned_table.mds_2d(snaps.tables[-1], seed=ctx.seed)
    figures.mds_and_distances(coords, {"trained": _offset_distance_curve(snaps.tables[-1]),
                                       "initialisation": _offset_distance_curve(snaps.tables[0])},
                              ctx.figure("learned_mds.png"))
    measures = {"adjacent": ([], []), "rho": ([], [])}  # (trained, initialisation) over seeds
    for seed in ctx.seeds:
        if _snapshots_path(ctx, seed).exists():
            tables = learned_table.load_snapshots(_snapshots_path(ctx, seed), rows=c).tables
            for when, table in ((0, tables[-1]), (1, tables[0])):
                measures["adjacent"][when].append(learned_table.adjacent_nearest_neighbours(table))
                measures["rho"][when].append(learned_table.distance_offset_correlation(table))
    adjacent, rho = measures["adjacent"], measures["rho"]
    ordered = summarize(adjacent[0])["mean"] >= 0.5
    reading = (
        f"Rows 0–{c - 1} of seed {ctx.seed}'s table at {len(traj.steps)} checkpoints, all projected on the first "
        f"two principal components of the trained table, which hold {traj.explained.sum():.0%} of its variance. "
        f"After training, the nearest row of a position is a neighbouring position (i ± 1) for "
        f"{_over_seeds([100 * x for x in adjacent[0]], 0, unit='%')} of positions, against "
        f"{_over_seeds([100 * x for x in adjacent[1]], 0, unit='%')} at initialisation"
        + (" — training lays most positions out in order along a curve. " if ordered else ". ")
        + f"The MDS map of seed {ctx.seed}'s trained table has Kruskal stress {stress:.2f}. The translation report "
        "reads its MDS figure as “close positions have closer encodings”; here the Spearman ρ between |i − j| and "
        f"‖PE(i) − PE(j)‖ is {_over_seeds(rho[0], 2)} after training ({_over_seeds(rho[1], 2)} at initialisation)"
        + (", lower than the ordering suggests: the curve bends back, so distant positions can be close."
           if ordered and summarize(rho[0])["mean"] < 0.7 else ".")
    )
    return lines + [reading, "", ctx.image("learned table PCA during training", "learned_pca.png"), "",
                    f"Animated: [learned_pca.gif]({ctx.link}/learned_pca.gif)", "",
                    ctx.image("MDS of the learned table", "learned_mds.png"), ""]


# 5. Distance decay ------------------------------------------------------------------------------------
def _distance_decay(ctx: ReportContext) -> list[str]:
    lines = ["### Distance decay, raw and through trained W_q, W_k (translation report, after TENER)", ""]
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, m, c = _base(ctx), ctx.copy.data.long_context, ctx.copy.data.context
    delta = distance_decay.offsets(m).numpy()
    sin_raw = distance_decay.sinusoidal_decay(d, m, base)
    rope_raw = distance_decay.rope_decay(h, m, base)
    bound = distance_decay.rope_relative_upper_bound(h, m, base)
    raw = {
        f"sinusoidal, d = {d}": {"PE(t)·PE(t+Δ)": (delta, (sin_raw / sin_raw[m]).numpy())},
        f"RoPE, head dim {h}": {"⟨R_t 1, R_(t+Δ) 1⟩": (delta, (rope_raw / rope_raw[m]).numpy()),
                               "RoFormer relative upper bound": (delta, (bound / bound[m]).numpy())},
    }
    parts = [
        "Raw, the sinusoidal score is symmetric (max |s(Δ) − s(−Δ)| / s(0) = "
        f"{_sci(distance_decay.asymmetry(sin_raw))}) "
        f"and largest at Δ = {int(delta[sin_raw.argmax()])}; RoPE with q = k = 1 likewise "
        f"({_sci(distance_decay.asymmetry(rope_raw))}, largest at Δ = {int(delta[rope_raw.argmax()])}), and its "
        f"RoFormer bound falls to {float(bound[-1] / bound[m]):.2f} of its Δ = 0 value at Δ = {m}."
    ]
    trained = {}
    if "sinusoidal" in ctx.schemes:
        spreads, self_max = [], []
        for seed in ctx.seeds:
            scores = distance_decay.layer0_scores(ctx.model("copy", "sinusoidal", seed), c)  # (H, T, T)
            spreads.append(distance_decay.relative_only_spread(scores))
            self_max.append(float((scores.argmax(-1) == torch.arange(c)).float().mean()))
            if seed == ctx.seed:
                dd, mean, low, high = distance_decay.scores_by_offset(scores)
                trained[f"sinusoidal model (seed {seed}), layer 0:\nPE(t) through LayerNorm, W_q, W_k"] = \
                    (dd.numpy(), mean.numpy(), low.numpy(), high.numpy())
        parts.append(
            "Through layer 0 of the trained `sinusoidal` models (position vectors alone, as TENER's "
            f"PE(t)ᵀW_qᵀW_k PE(s)), the score is no longer a function of the offset: its spread along a fixed "
            f"Δ is {_over_seeds(spreads, 2)} of the largest score, and the largest score of a query position "
            f"falls on itself in {_over_seeds([100 * x for x in self_max], 0, unit='%')} of (head, position) rows "
            "(100% raw) — the projection discards both properties, as TENER says."
        )
    if "rope" in ctx.schemes:
        token_ids = list(range(ctx.copy.data.n_digits))
        spreads, peaks = [], []
        for seed in ctx.seeds:
            scores = distance_decay.same_token_scores(ctx.model("copy", "rope", seed), c, token_ids)
            spreads.append(distance_decay.relative_only_spread(scores))
            dd, mean, low, high = distance_decay.scores_by_offset(scores)
            peaks += [int(dd[i]) for i in mean.argmax(-1)]
            if seed == ctx.seed:
                trained[f"RoPE model (seed {seed}), layer 0:\nsame digit at every position, mean over digits"] = \
                    (dd.numpy(), mean.numpy(), low.numpy(), high.numpy())
        at_zero = sum(p == 0 for p in peaks)
        elsewhere = ", ".join(str(p) for p in sorted(set(peaks) - {0}))
        parts.append(
            "Through layer 0 of the trained `rope` models (the same digit at every position, averaged over "
            f"digits) the score still depends on the offset only — spread {max(spreads):.1e} of the largest "
            f"score at most, float32 rounding — but its shape is learned: {at_zero} of {len(peaks)} heads "
            "(over seeds) peak at Δ = 0"
            + (f", the others at Δ ∈ {{{elsewhere}}}." if elsewhere else ".")
        )
    figures.distance_decay(raw, trained, ctx.figure("distance_decay.png"))
    return lines + [" ".join(parts), "", ctx.image("distance decay", "distance_decay.png"), ""]


# 6. Linear shift property -----------------------------------------------------------------------------
def _shift_property(ctx: ReportContext) -> list[str]:
    lines = ["### The linear shift property of the sinusoidal table (linear-shift notebook)", ""]
    length, dim, phi = NOTEBOOK_LENGTH, NOTEBOOK_DIM, NOTEBOOK_PHI
    base = _base(ctx)
    table = sinusoidal_table(torch.arange(length, dtype=torch.float64), dim, base)
    matrix = shift_property.shift_matrix(dim, phi, base)
    figures.shift_property(table.numpy(), shift_property.shift_block_matrix(table, phi, base).numpy(), matrix.numpy(),
                           phi, ctx.figure("shift_property.png"))
    d, long, c = ctx.copy.model.d_model, ctx.copy.data.long_context, ctx.copy.data.context
    settings = [
        (f"notebook: {length} positions, d = {dim}, φ = {phi}", length, dim, phi),
        (f"our model: {long} positions, d = {d}, φ = {c}", long, d, c),
    ]
    errors = {(label, dtype): shift_property.shift_errors(n, dm, p, base, dtype)
              for label, n, dm, p in settings for dtype in (torch.float64, torch.float32)}
    header = ["way"] + [f"{label}, {str(dtype).removeprefix('torch.')}" for label, *_ in settings
                        for dtype in (torch.float64, torch.float32)]
    rows = [[way] + [_sci(errors[(label, dtype)][way]) for label, *_ in settings
                     for dtype in (torch.float64, torch.float32)] for way in shift_property.SHIFT_WAYS]
    f64 = errors[(settings[0][0], torch.float64)]
    f32 = errors[(settings[0][0], torch.float32)]
    worst64 = max(f64, key=f64.get)
    reading = (
        f"PE(t + φ) = M(φ)·PE(t) with M(φ) block-diagonal, one 2×2 rotation by w_k·φ per frequency. The four "
        "ways of the notebook "
        + ("give the same shifted table" if f64[worst64] < 1e-10 else "do not all reproduce the shifted table")
        + ": in float64 the largest error against the directly "
        f"computed PE(t + φ) is {_sci(f64[worst64])} ({worst64}), at the level of rounding in sin/cos of angles up to "
        f"{length + phi - 1} rad. In float32 it is {_sci(max(f32.values()))} at the notebook's size — the "
        f"directly computed table itself is only that accurate there (float32 spacing near {length + phi - 1} is "
        f"{np.spacing(np.float32(length + phi - 1)):.1e}) — and "
        f"{_sci(max(errors[(settings[1][0], torch.float32)].values()))} at our model's size. Max |way − PE(t + φ)|:"
    )
    return lines + [reading, "", markdown_table(header, rows), "",
                    ctx.image("sinusoidal shift property", "shift_property.png"), ""]


# 7. Invariants ----------------------------------------------------------------------------------------
def _invariants(ctx: ReportContext) -> list[str]:
    lines = ["### Constant norm of sinusoidal rows (notes on positional encoding), relative-only RoPE scores "
             "(sinusoidal and rotary post)", ""]
    d, h = ctx.copy.model.d_model, ctx.copy.model.d_model // ctx.copy.model.n_heads
    base, long = _base(ctx), ctx.copy.data.long_context
    rows, worst = [], {}
    for dtype in (torch.float64, torch.float32):
        name = str(dtype).removeprefix("torch.")
        measured = [
            (f"‖PE(t)‖ = √(d/2) = {math.sqrt(d / 2):.3f}", f"t < {long}, d = {d}",
             norms.sinusoidal_norm_deviation(long, d, base, dtype), NORM_MEASURE),
            (f"‖PE(t)‖ = √(d/2) = {math.sqrt(NOTEBOOK_DIM / 2):.3f}", f"t < {NOTEBOOK_LENGTH}, d = {NOTEBOOK_DIM}",
             norms.sinusoidal_norm_deviation(NOTEBOOK_LENGTH, NOTEBOOK_DIM, base, dtype), NORM_MEASURE),
            ("⟨R_m q, R_n k⟩ depends on n − m only", f"m, n < {long}, head dim {h}, 8 random (q, k)",
             norms.rope_relative_deviation(long, h, base, dtype), ROPE_MEASURE),
        ]
        rows += [[claim, setting, name, _sci(value), measure] for claim, setting, value, measure in measured]
        worst[name] = max(value for _, _, value, _ in measured)
    holds = worst["float64"] < 1e-12 and worst["float32"] < 1e-5
    reading = (
        "The notes' constant-norm property and the RoFormer relative-position property, measured on the tables and "
        f"rotations the models use (`pelab.positional.functional`). The largest deviation is {_sci(worst['float64'])} "
        f"in float64 and {_sci(worst['float32'])} in float32"
        + (": both properties hold to rounding." if holds else ": larger than rounding — a property is violated.")
    )
    header = ["property", "setting", "dtype", "max deviation", "measured as"]
    return lines + [reading, "", markdown_table(header, rows), ""]


# 8. Attention maps ------------------------------------------------------------------------------------
def _attention(ctx: ReportContext) -> list[str]:
    lines = ["### Attention maps on `7 1 8 2 <copy> _ _ _ _ _` (copy-task post)", ""]
    tokens, target = attention.copy_example(ctx.copy.data)
    labels = attention.token_labels(tokens, ctx.copy.data)
    n = len(attention.EXAMPLE_DIGITS)
    rows, images, mean_alignment = [], [], {}
    for scheme in ctx.schemes:
        alignment, correct = [], []
        for seed in ctx.seeds:
            weights, predicted = attention.attention_maps(ctx.model("copy", scheme, seed), tokens)
            per_head = attention.copy_alignment(weights, n)  # (L, H)
            alignment.append(float(per_head.max()))
            correct.append(bool((predicted == target).all()))
            if seed == ctx.seed:
                layer, head = divmod(int(per_head.argmax()), per_head.shape[1])
                seed_head = f"layer {layer}, head {head} ({float(per_head.max()):.2f})"
                prediction = " ".join(attention.token_labels(predicted, ctx.copy.data))
                figures.attention_grid(weights.numpy(), labels,
                                       f"{scheme} (seed {seed}); model output: {prediction}",
                                       ctx.figure(f"attention_{scheme}.png"))
                images += [ctx.image(f"attention, {scheme}", f"attention_{scheme}.png"), ""]
        mean_alignment[scheme] = summarize(alignment)["mean"]
        rows.append([f"`{scheme}`", _over_seeds(alignment, 2), seed_head, f"{sum(correct)} / {len(correct)}"])
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


# 9. Curves ----------------------------------------------------------------------------------------------
def _histories(ctx: ReportContext) -> pd.DataFrame:
    return ctx.curves[ctx.curves["task"] == "copy"]


def _curves(ctx: ReportContext) -> list[str]:
    lines = ["### Training and held-out curves", ""]
    plots = ("`dvc plots show` and `dvc plots diff main <experiment>` overlay the per-scheme means of "
             "`reports/plots/copy_train_loss.csv` and `copy_val_loss.csv` with the `overlay_schemes` template "
             "(colour = scheme, dash = revision).")
    histories = _histories(ctx)
    last = histories[histories["step"] == histories["step"].max()]
    logged = [s for s in ctx.schemes if "val_loss" in last and last[last["pe"] == s]["val_loss"].notna().all()]
    if not logged:
        return lines + ["These runs logged no held-out loss (trained before `val_loss` was recorded); the training "
                        "loss is the figure in the copy section. " + plots, ""]
    figures.loss_curves(histories, ctx.schemes, ctx.figure("copy_loss_curves.png"))
    final = {s: last[last["pe"] == s].sort_values("seed") for s in logged}
    val = {s: summarize(f["val_loss"].tolist()) for s, f in final.items()}
    gap = {s: summarize((f["val_loss"] - f["loss"]).tolist())["mean"] for s, f in final.items()}
    best, worst = min(val, key=lambda s: val[s]["mean"]), max(val, key=lambda s: val[s]["mean"])
    widest = max(gap, key=gap.get)
    reading = (
        f"Mean over seeds, band = min–max. At the last step (step {int(last['step'].max())}) the held-out loss is "
        f"lowest for `{best}` ({_mean_sd_sci(val[best])}) and highest for `{worst}` ({_mean_sd_sci(val[worst])}); "
        f"the largest gap between held-out and training loss is `{widest}`'s ({gap[widest]:+.1e}). The training "
        "loss is the mean over the last logged steps' batches, the held-out loss is on the first 256 sequences of the test "
        "split, which no choice in training depends on. "
        + ("" if len(logged) == len(ctx.schemes) else
           f"Runs of {', '.join(f'`{s}`' for s in ctx.schemes if s not in logged)} logged no held-out loss. ")
        + plots
    )
    return lines + [reading, "", ctx.image("training and held-out loss", "copy_loss_curves.png"), ""]


# Translation: analyses 2, 4 and 8 on the encoder-decoders -------------------------------------------------
def translation_schemes(ctx: ReportContext, seed: int) -> list[str]:
    """The schemes with a trained translation model for ``seed``."""
    return [s for s in ctx.schemes if "translation" in ctx.params.tasks and ctx.has_run("translation", s, seed)]


def _translation_tables(ctx: ReportContext, schemes: list[str]) -> list[str]:
    lines = ["### Translation: position tables and MDS of the trained learned tables", ""]
    if "learned" not in schemes:
        return lines + ["`learned` has no trained translation model in this run.", ""]
    cfg = ctx.cfg("translation")
    rows = min(cfg.data.max_tokens + 1, cfg.options("learned").max_positions)
    model = ctx.model("translation", "learned", ctx.seed)
    encoder, decoder = (pe.table.weight[:rows].detach().double() for pe in (model.encoder.pe, model.decoder.pe))
    sinusoidal = sinusoidal_table(torch.arange(rows, dtype=torch.float64), cfg.model.d_model,
                                  _base(ctx))
    figures.position_tables({"sinusoidal": sinusoidal.numpy(), f"learned, encoder (seed {ctx.seed})": encoder.numpy(),
                             f"learned, decoder (seed {ctx.seed})": decoder.numpy()},
                            ctx.figure("translation_pe_tables.png"))
    coords, stress = learned_table.mds_2d(encoder, seed=ctx.seed)
    figures.mds_and_distances(coords, {"encoder": _offset_distance_curve(encoder),
                                       "decoder": _offset_distance_curve(decoder)},
                              ctx.figure("translation_learned_mds.png"))
    rho = {"encoder": [], "decoder": []}
    for seed in ctx.seeds:
        if "learned" in translation_schemes(ctx, seed):
            m = ctx.model("translation", "learned", seed)
            rho["encoder"].append(learned_table.distance_offset_correlation(m.encoder.pe.table.weight[:rows].detach()))
            rho["decoder"].append(learned_table.distance_offset_correlation(m.decoder.pe.table.weight[:rows].detach()))
    reading = (
        f"Rows 0–{rows - 1} (sentences of up to {cfg.data.max_tokens} subword tokens). Spearman ρ between |i − j| "
        f"and ‖PE(i) − PE(j)‖: encoder {_over_seeds(rho['encoder'], 2)}, "
        f"decoder {_over_seeds(rho['decoder'], 2)}. "
        f"The MDS map (encoder table, seed {ctx.seed}) has Kruskal stress {stress:.2f}."
    )
    return lines + [reading, "", ctx.image("translation position tables", "translation_pe_tables.png"), "",
                    ctx.image("MDS of the translation learned table", "translation_learned_mds.png"), ""]


def _translation_attention(ctx: ReportContext, schemes: list[str], data) -> list[str]:
    lines = ["### Translation: encoder self, decoder self and cross attention on one sentence", ""]
    split = data.eval_splits[0]
    index = (ctx.cfg("translation").eval.examples or (0,))[0]
    src = torch.tensor(data.ids(split, "src_ids")[index])
    tgt_in = torch.tensor([BOS_ID, *data.ids(split, "tgt_ids")[index]])
    src_labels = [data.tokenizer.id_to_token(int(i)) for i in src]
    tgt_labels = [data.tokenizer.id_to_token(int(i)) for i in tgt_in]
    rows, images = [], []
    for scheme in schemes:
        local = {"encoder self": [], "decoder self": []}
        for seed in ctx.seeds:
            if scheme not in translation_schemes(ctx, seed):
                continue
            maps = attention.seq2seq_attention_maps(ctx.model("translation", scheme, seed), src, tgt_in)
            for kind in local:
                local[kind].append(float(attention.local_mass(maps[kind]).mean()))
            if seed == ctx.seed:
                name = f"translation_attention_{scheme}.png"
                figures.seq2seq_attention({k: v.numpy() for k, v in maps.items()}, src_labels, tgt_labels,
                                          f"{scheme} (seed {seed}), {split} sentence {index}, teacher-forced reference",
                                          ctx.figure(name))
                images += [ctx.image(f"translation attention, {scheme}", name), ""]
        rows.append([f"`{scheme}`", _over_seeds(local["encoder self"], 2), _over_seeds(local["decoder self"], 2)])
    reading = (
        f"Source: “{data.text(split, 'fr')[index]}”; the decoder reads the reference "
        f"“{data.text(split, 'en')[index]}” "
        "(teacher forcing). Attention weight within one position of the query (mean over layers, heads and "
        "queries; the C05 report's “concentrated on the diagonal”):"
    )
    header = ["scheme", "encoder self, within ±1", "decoder self, within ±1"]
    return lines + [reading, "", markdown_table(header, rows), ""] + images


def translation_analyses(ctx: ReportContext) -> list[str]:
    """The translation report's analyses on this pipeline's translation models; nothing if none were trained.

    The prepared corpus supplies the example sentence of the attention maps (encoder self, decoder self, cross).
    """
    schemes = translation_schemes(ctx, ctx.seed)
    if not schemes:
        return []
    lines = _translation_tables(ctx, schemes)
    if ctx.translation_data is None:
        return lines + ["Translation attention maps need the prepared corpus (its tokenizer); none was given.", ""]
    return lines + _translation_attention(ctx, schemes, ctx.translation_data)


def analysis_section(ctx: ReportContext) -> list[str]:
    """Markdown lines of the analyses section; writes its figures into ``ctx.figures_dir``."""
    if not ctx.has_task("copy"):
        return []
    lines = [
        "## The references' analyses, reproduced",
        "",
        f"Each analysis of the reference documents, recomputed from this pipeline's trained models. Figures "
        f"of a single model show seed {ctx.seed}; numbers marked with n are over all {len(ctx.seeds)} seeds "
        "(mean ± sd, Student-t 95% interval). The copy-task post's accuracy comparison, with every seed visible, "
        "is the first figure of the copy section above.",
        "",
    ]
    with torch.no_grad():
        for part in (_tables, _similarity, _learned_trajectory, _distance_decay, _shift_property, _invariants,
                     _attention, _curves):
            lines += part(ctx)
        lines += translation_analyses(ctx)
    lines += [
        "### Anchors: our numbers beside published ones",
        "",
        anchors_table(ctx.records, {"context": ctx.copy.data.context, "n_layers": ctx.copy.model.n_layers,
                                    "d_model": ctx.copy.model.d_model}),
        "",
    ]
    return lines
