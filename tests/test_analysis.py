"""The numbers the report states about the references' analyses (``pelab.analysis``, drawn by
``pelab.report.analyses``), checked on known inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch.testing import assert_close

from pelab.positional.functional import sinusoidal_table
from pelab.probe import captures
from pelab.analysis import attention, decay, invariants, learned_table, shift, similarity
from pelab.report.analyses import attention as attention_section
from pelab.report.analyses import distance_decay as decay_section
from pelab.report.analyses.anchors import ANCHORS, anchors_table
from pelab.tasks.copy.config import CopyDataConfig as CopyTaskConfig
from pelab.tasks.copy.config import ModelConfig
from pelab.tasks.copy.evaluate import example_row, token_labels
from pelab.tasks.copy.model import build_copy_model

WAYS = shift.SHIFT_WAYS
TASK = CopyTaskConfig(context=20, long_context=40)
MODEL = ModelConfig(d_model=32, n_layers=2, n_heads=4, d_ff=64, dropout=0.0)


def copy_model(scheme: str, seed: int = 0):
    return build_copy_model(scheme, TASK.vocab_size, MODEL, None, seed).eval()


# Linear shift property ----------------------------------------------------------------------------------
@pytest.mark.parametrize("way", WAYS)
def test_shift_ways_match_the_shifted_table_in_float64(way: str) -> None:
    """The notebook's setting (200 positions, d = 256, φ = 100): 2.8e-14 measured for every way; the bound leaves
    room for the 6.8e-9 that way 1 gave in two fresh-clone CI runs (not reproduced in isolation)."""
    assert shift.shift_errors(200, 256, 100)[way] < 1e-8


@pytest.mark.parametrize("way", WAYS)
def test_shift_ways_match_the_shifted_table_in_float32(way: str) -> None:
    """Our model's setting (40 positions, d = 64, φ = 20), where float32 angles stay small."""
    assert shift.shift_errors(40, 64, 20, dtype=torch.float32)[way] < 1e-5


def test_shift_ways_agree_with_each_other_and_with_the_matrix_form() -> None:
    table = sinusoidal_table(torch.arange(50, dtype=torch.float64), 16)
    results = [fn(table, 7) for fn in shift.SHIFT_FUNCTIONS.values()]
    for result in results[1:]:
        assert_close(result, results[0], rtol=0, atol=1e-13)
    m = shift.shift_matrix(16, 7)
    assert_close(m @ table[3], sinusoidal_table(torch.tensor([10.0], dtype=torch.float64), 16)[0], rtol=0, atol=1e-13)


def test_shift_matrix_is_a_rotation_that_composes() -> None:
    m3, m4, m7 = (shift.shift_matrix(32, phi) for phi in (3, 4, 7))
    assert_close(m3 @ m3.T, torch.eye(32, dtype=torch.float64), rtol=0, atol=1e-14)
    assert_close(m3 @ m4, m7, rtol=0, atol=1e-14)
    assert torch.count_nonzero(m7) == 2 * 32  # block-diagonal: one 2×2 block per frequency


# Norms and relative-only RoPE -------------------------------------------------------------------------
@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_sinusoidal_rows_have_norm_sqrt_half_d(dtype: torch.dtype, tolerance: float) -> None:
    assert invariants.sinusoidal_norm_deviation(200, 256, dtype=dtype) < tolerance
    assert invariants.sinusoidal_norm_deviation(40, 64, dtype=dtype) < tolerance
    assert_close(invariants.sinusoidal_row_norms(5, 8), torch.full((5,), 2.0, dtype=torch.float64))  # the notes' output


@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_rope_scores_depend_on_the_offset_only(dtype: torch.dtype, tolerance: float) -> None:
    assert invariants.rope_relative_deviation(64, 16, dtype=dtype) < tolerance


def test_diagonal_spread_detects_non_toeplitz_matrices() -> None:
    toeplitz = torch.tensor([[1.0, 2.0, 3.0], [4.0, 1.0, 2.0], [5.0, 4.0, 1.0]])
    assert float(invariants.diagonal_spread(toeplitz).max()) == 0.0
    toeplitz[1, 2] = 2.5
    assert float(invariants.diagonal_spread(toeplitz)[3]) == pytest.approx(0.5)  # offset +1 is index T−1+1 = 3


# Distance decay -------------------------------------------------------------------------------------
def test_raw_sinusoidal_score_is_symmetric_maximal_at_zero_and_a_sum_of_cosines() -> None:
    d, m = 64, 40
    curve = decay.sinusoidal_decay(d, m)
    delta = decay.offsets(m).double()
    assert decay.asymmetry(curve) < 1e-14
    assert int(delta[curve.argmax()]) == 0
    assert float(curve[m]) == pytest.approx(d / 2)
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    assert_close(curve, torch.cos(delta[:, None] * w).sum(1), rtol=0, atol=1e-12)  # Σ_k cos(Δ w_k)
    assert_close(decay.sinusoidal_decay(d, m, t0=77), curve, rtol=0, atol=1e-12)  # independent of t


def test_raw_rope_score_and_roformer_bound() -> None:
    h, m = 16, 40
    curve = decay.rope_decay(h, m)
    assert decay.asymmetry(curve) < 1e-14
    assert int(decay.offsets(m)[curve.argmax()]) == 0
    assert float(curve[m]) == pytest.approx(h)  # ‖1‖² with Dh ones
    bound = decay.rope_relative_upper_bound(h, m)
    assert float(bound[m]) == pytest.approx((h / 2 + 1) / 2)  # |S_i| = i at Δ = 0, mean over i = 1..Dh/2
    assert float(bound[-1]) < float(bound[m])


def test_layer0_scores_are_the_logits_of_the_model_attention() -> None:
    """softmax of the layer-0 scores reproduces the model's own layer-0 attention weights."""
    model = copy_model("sinusoidal")
    tokens, _ = example_row(TASK)
    scores = captures.layer0_scores(model, TASK.context, tokens)
    weights, _ = captures.attention_maps(model, tokens)
    assert_close(scores.softmax(-1), weights[0], rtol=1e-5, atol=1e-6)


def test_projection_breaks_the_relative_property_of_sinusoidal_but_not_of_rope() -> None:
    sinusoidal = captures.layer0_scores(copy_model("sinusoidal"), TASK.context)
    rope = captures.same_token_scores(copy_model("rope"), TASK.context, list(range(TASK.n_digits)))
    assert decay.relative_only_spread(sinusoidal) > 0.05
    assert decay.relative_only_spread(rope) < 1e-5
    delta, mean, low, high = decay.scores_by_offset(rope)
    assert delta.tolist() == list(range(-(TASK.context - 1), TASK.context))
    assert_close(low, high, rtol=0, atol=1e-5)
    assert mean.shape == (MODEL.n_heads, 2 * TASK.context - 1)


def test_peaks_by_offset_and_the_share_of_queries_peaking_on_themselves() -> None:
    t = 6
    offset = torch.arange(t)[None, :] - torch.arange(t)[:, None]  # s − t
    scores = torch.stack([-(offset.double() ** 2), -((offset - 2).double() ** 2)])  # peaks at Δ = 0 and Δ = 2
    assert decay.peak_offsets(scores) == [0, 2]
    # every query of head 0; of head 1 only the last, whose key t + 2 lies past the row (its nearest key is itself)
    assert decay.self_peak_share(scores) == pytest.approx(7 / 12)
    # scores that depend on more than the offset: the mean by offset peaks at Δ = −1 (row 0 alone peaks at 0);
    # queries 0 and 2 peak on themselves, while keys 1 and 2 (columns) would count one query fewer
    mixed = torch.tensor([[[5.0, 4.0, 0.0], [9.0, 1.0, 0.0], [0.0, 0.0, 2.0]]])
    assert decay.peak_offsets(mixed) == [-1]
    assert decay.self_peak_share(mixed) == pytest.approx(2 / 3)


# Similarity, PCA, MDS -------------------------------------------------------------------------------
def test_similarity_matrices() -> None:
    table = torch.randn(12, 8, generator=torch.Generator().manual_seed(0))
    sims = similarity.position_similarity(table)
    assert_close(sims["cosine"].diagonal(), torch.ones(12, dtype=torch.float64))
    assert_close(sims["dot"], sims["dot"].T)
    assert_close(sims["dot"].diagonal(), table.double().norm(dim=1) ** 2)
    by_offset = similarity.mean_by_offset(sims["cosine"])
    assert by_offset.shape == (12,) and float(by_offset[0]) == pytest.approx(1.0)
    sinusoidal = similarity.position_similarity(sinusoidal_table(torch.arange(20, dtype=torch.float64), 64))
    assert float(similarity.mean_by_offset(sinusoidal["cosine"], 1)[1]) > 0.9


def curve_table(positions: int = 20, dim: int = 16, noise: float = 0.0, seed: int = 0) -> torch.Tensor:
    """Rows on a planar arc in the first two dimensions (a table ordered by position), plus noise."""
    t = torch.arange(positions, dtype=torch.float64)
    table = torch.zeros(positions, dim, dtype=torch.float64)
    table[:, 0], table[:, 1] = torch.cos(t / 8), torch.sin(t / 8)
    gen = torch.Generator().manual_seed(seed)
    return table + noise * torch.randn(positions, dim, generator=gen, dtype=torch.float64)


def test_pca_trajectory_shapes_and_explained_variance(tmp_path) -> None:
    init = 0.02 * torch.randn(128, 16, generator=torch.Generator().manual_seed(1))
    final = init.clone()
    final[:20] = curve_table(noise=0.01).float()
    snapshots = [(step, {"table.weight": table}) for step, table in ((0, init), (50, (init + final) / 2), (100, final))]
    torch.save(snapshots, tmp_path / "position_snapshots.pt")
    loaded = learned_table.load_snapshots(tmp_path / "position_snapshots.pt", rows=20)
    assert loaded.steps == [0, 50, 100] and loaded.tables.shape == (3, 20, 16)
    traj = learned_table.pca_trajectory(loaded)
    assert traj.coords.shape == (3, 20, 2)
    assert 0 <= traj.explained[1] <= traj.explained[0] <= 1
    assert traj.explained.sum() > 0.95  # the trained table is planar
    assert learned_table.adjacent_nearest_neighbours(loaded.tables[-1]) == 1.0  # ordered after training
    assert learned_table.adjacent_nearest_neighbours(loaded.tables[0]) < 0.5  # not at initialisation


def test_mds_recovers_a_planar_table_and_the_offset_correlation() -> None:
    table = curve_table()
    coords, stress = learned_table.mds_2d(table)
    assert coords.shape == (20, 2)
    assert stress < 0.05
    embedded = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    assert np.allclose(embedded, learned_table.pairwise_distances(table), atol=0.05)
    assert learned_table.distance_offset_correlation(table) > 0.99  # ties at equal offsets differ by rounding only
    random = torch.randn(20, 16, generator=torch.Generator().manual_seed(0))
    assert abs(learned_table.distance_offset_correlation(random)) < 0.3


# Attention maps ---------------------------------------------------------------------------------------
def test_copy_example_is_the_posts_example_padded_to_the_context() -> None:
    tokens, target = example_row(TASK)
    assert token_labels(tokens, TASK)[:6] == ["7", "1", "8", "2", "<copy>", "_"]
    assert tokens.shape == (TASK.context,)
    assert target[:9].tolist() == [7, 1, 8, 2, TASK.copy_token, 7, 1, 8, 2]
    assert (target[9:] == TASK.pad_token).all()


@pytest.mark.parametrize("scheme", ["none", "sinusoidal", "rope", "alibi", "t5"])
def test_attention_maps_are_distributions(scheme: str) -> None:
    tokens, _ = example_row(TASK)
    weights, predicted = captures.attention_maps(copy_model(scheme), tokens)
    assert weights.shape == (MODEL.n_layers, MODEL.n_heads, TASK.context, TASK.context)
    assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert (weights >= 0).all() and predicted.shape == (TASK.context,)


def test_copy_alignment_is_one_for_a_perfect_copy_head_and_one_over_t_for_uniform() -> None:
    t, n = TASK.context, 4
    perfect = torch.full((1, 2, t, t), 0.0)
    perfect[0, 0, torch.arange(n) + n + 1, torch.arange(n)] = 1.0
    perfect[0, 1] = 1.0 / t
    assert_close(attention.copy_alignment(perfect, n), torch.tensor([[1.0, 1.0 / t]]))


# Anchors ----------------------------------------------------------------------------------------------
def test_anchors_table_puts_our_mean_beside_the_published_number() -> None:
    rows = [{"task": "copy", "pe": "sinusoidal", "seed": s, "split": "test", "length": "all",
             "metric": "exact_match", "value": v} for s, v in enumerate([0.99, 1.0, 0.98])]
    table = anchors_table(pd.DataFrame(rows), {"context": 20, "n_layers": 2, "d_model": 64})
    line = next(row for row in table.splitlines() if "`sinusoidal`" in row and "accuracy" in row)
    assert "0.997" in line and "0.990 ± 0.010" in line and "n = 3" in line
    assert "not in this run" in next(row for row in table.splitlines() if "`none`" in row)
    assert "characters" in table  # the BLEU caveat
    assert len([row for row in table.splitlines() if row.startswith("| ")]) == len(ANCHORS) + 1
    assert math.isclose(next(a.published for a in ANCHORS if a.scheme == "alibi_sym"), 0.14)


# Translation hooks (run only when translation models exist) ----------------------------------------------
class TinyCorpus:
    """The parts of ``PreparedTranslation`` the attention maps read: one split, ids, text and a tokenizer."""

    eval_splits = ["test_2016_flickr"]

    class tokenizer:  # noqa: N801 - mimics tokenizers.Tokenizer.id_to_token
        @staticmethod
        def id_to_token(i: int) -> str:
            return f"t{i}"

    def ids(self, split: str, column: str) -> list[list[int]]:
        return {"src_ids": [[5, 6, 7, 8, 3]], "tgt_ids": [[9, 10, 11]]}[column]

    def text(self, split: str, lang: str) -> list[str]:
        return {"fr": ["un deux trois quatre"], "en": ["one two three"]}[lang]


def test_seq2seq_attention_maps_and_translation_hooks(tmp_path) -> None:
    """Evaluation captures the example's attention (``example_captures``); the report draws it and the learned
    tables from files alone."""
    import json
    from dataclasses import asdict

    import pandas as pd
    from conftest import smoke_params, study_of

    from pelab.report.analyses import translation_analyses
    from pelab.report.context import ReportContext
    from pelab.tasks.translation.config import Seq2SeqConfig
    from pelab.tasks.translation.evaluate import example_captures, seq2seq_attention_maps
    from pelab.tasks.translation.model import build_seq2seq_model

    cfg = Seq2SeqConfig(d_model=16, encoder_layers=1, decoder_layers=2, n_heads=2, d_ff=32, dropout=0.0)
    params = smoke_params(tmp_path, seeds=[0], pe={"schemes": ["learned", "rope"]})
    for scheme in params.schemes:
        run = tmp_path / "runs" / "translation" / scheme / "seed_0"
        run.mkdir(parents=True)
        options = asdict(params.task("translation").options(scheme))
        model = build_seq2seq_model(scheme, 40, cfg, options, 0)
        torch.save(model.state_dict(), run / "model.pt")
        (run / "run.json").write_text(json.dumps({"task": "translation", "scheme": scheme, "seed": 0,
                                                  "model": asdict(cfg), "options": options,
                                                  "info": {"vocab_size": 40, "max_length": 41}}))
        result = tmp_path / "results" / "translation" / scheme / "seed_0"
        result.mkdir(parents=True)
        captured = example_captures(params.task("translation"), model, TinyCorpus())
        assert captured["src_labels"] == ["t5", "t6", "t7", "t8", "t3"] and captured["tgt_labels"][0] == "t2"
        torch.save(captured, result / "probe.pt")
    model = build_seq2seq_model("rope", 40, cfg, None, 0)
    maps = seq2seq_attention_maps(model, torch.tensor([5, 6, 7, 3]), torch.tensor([2, 9, 10]))
    assert maps["encoder self"].shape == (1, 2, 4, 4)
    assert maps["decoder self"].shape == (2, 2, 3, 3) and maps["cross"].shape == (2, 2, 3, 4)
    for weights in maps.values():
        assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert float(maps["decoder self"].triu(1).abs().max()) == 0.0  # causal

    records, curves = pd.DataFrame(columns=["task"]), pd.DataFrame()
    ctx = ReportContext(study_of(params), records, curves, tmp_path / "runs", tmp_path / "results", tmp_path / "figures")
    ctx.figures_dir.mkdir()
    lines = translation_analyses.section(ctx)
    text = "\n".join(lines)
    assert "encoder self, within ±1" in text and "`rope`" in text and "“un deux trois quatre”" in text
    for name in ("translation_pe_tables.png", "translation_learned_mds.png", "translation_attention_learned.png",
                 "translation_attention_rope.png"):
        assert (tmp_path / "figures" / name).stat().st_size > 0
    empty = ReportContext(study_of(params), records, curves, tmp_path / "nothing", tmp_path / "nothing",
                          tmp_path / "figures")
    assert translation_analyses.section(empty) == []


def test_local_mass() -> None:
    eye = torch.eye(6)
    assert float(attention.local_mass(eye)) == pytest.approx(1.0)
    assert float(attention.local_mass(torch.full((6, 6), 1 / 6), width=1)) == pytest.approx((2 + 3 * 4 + 2) / 36)


# The copy analyses read what evaluation captured -----------------------------------------------------------
def test_the_copy_sections_state_what_the_models_themselves_give(tmp_path) -> None:
    """Evaluation's captures (``pelab.tasks.copy.evaluate.captures``) saved as probe.pt, read by the attention and
    distance-decay sections: the numbers they state equal those computed from the models directly (what the report
    computed before it read files), for sinusoidal (positions alone) and rope (one digit repeated); and the
    sequences-per-length table equals the prepared data's counts."""
    from conftest import smoke_params, study_of

    from pelab.report import copy as copy_report
    from pelab.report.common import over_seeds
    from pelab.report.context import ReportContext
    from pelab.tasks.copy import data as copy_data
    from pelab.tasks.copy.evaluate import captures as copy_captures
    from pelab.tasks.copy.evaluate import evaluate

    params = smoke_params(tmp_path, seeds=[0, 1], tasks=["copy"], pe={"schemes": ["sinusoidal", "rope"]})
    cfg = params.task("copy")
    c, tokens = cfg.data.context, example_row(cfg.data)[0]
    models = {(s, seed): build_copy_model(s, cfg.data.vocab_size, cfg.model, cfg.options(s), seed).eval()
              for s in params.schemes for seed in params.seeds}
    for (scheme, seed), model in models.items():
        out = tmp_path / "results" / "copy" / scheme / f"seed_{seed}"
        out.mkdir(parents=True)
        torch.save(copy_captures(cfg, model), out / "probe.pt")
    copy_data.prepare(cfg.data, tmp_path / "data")
    data = copy_data.load(tmp_path / "data")
    rows = [{"task": "copy", "pe": "rope", "seed": 0, **row}
            for row in evaluate(cfg, models["rope", 0], data, torch.device("cpu")) if row["split"] == "data"]
    records = pd.DataFrame(rows).astype({"length": str})
    ctx = ReportContext(study_of(params), records, pd.DataFrame(), tmp_path / "runs", tmp_path / "results",
                        tmp_path / "figures")
    ctx.figures_dir.mkdir()

    decay_text = "\n".join(decay_section.section(ctx))
    sinusoidal = [decay.relative_only_spread(captures.layer0_scores(models["sinusoidal", s], c))
                  for s in params.seeds]
    rope = [decay.relative_only_spread(
        captures.same_token_scores(models["rope", s], c, list(range(cfg.data.n_digits)))) for s in params.seeds]
    assert f"Δ is {over_seeds(sinusoidal, 2)} of the largest score" in decay_text
    assert f"spread {max(rope):.1e} of the largest" in decay_text
    maps = "\n".join(attention_section.section(ctx))
    for scheme in params.schemes:
        alignment = [float(attention.copy_alignment(captures.attention_maps(models[scheme, s], tokens)[0], 4).max())
                     for s in params.seeds]
        assert f"| `{scheme}` | {over_seeds(alignment, 2)} |" in maps
    assert (tmp_path / "figures" / "attention_rope.png").stat().st_size > 0

    table = copy_report._n_per_length(ctx)
    counts = {name: copy_data.sequences_per_length(data[name]) for name in ("train", "test", "test_long")}
    for n in sorted({n for split in counts.values() for n in split}):
        assert f"| {n} | {' | '.join(str(counts[s].get(n, 0)) for s in counts)} |" in table


# The probe's diagnostics over seeds (pelab.analysis.diagnostics) ----------------------------------------------
def _probe_records() -> pd.DataFrame:
    """Two schemes, two seeds, rows of 4 (the training length) and 8 tokens; one score beyond training."""
    rows = []
    for scheme, rise in (("a", 0.2), ("b", 0.0)):
        for seed in (0, 1):
            rows.append(("probe", "all", "trained_length", 4.0, scheme, seed))
            for length, entropy in ((4, 0.5), (8, 0.5 + rise + 0.1 * seed)):
                rows.append(("probe", str(length), "attn_entropy_norm", entropy, scheme, seed))
            rows.append(("beyond", "all", "token_accuracy", 0.1 if scheme == "a" else 0.9, scheme, seed))
    return pd.DataFrame([{"task": "t", "split": s, "length": n, "metric": m, "value": v, "pe": pe, "seed": k}
                         for s, n, m, v, pe, k in rows])


def test_probe_rows_against_the_training_length_and_their_change_to_the_longest() -> None:
    from pelab.analysis import diagnostics

    records = _probe_records()
    rows = diagnostics.relative_lengths(records[records["split"] == "probe"])
    assert sorted(set(rows["ratio"])) == [1.0, 2.0] and sorted(set(rows["tokens"])) == [4, 8]
    longer = records.assign(value=records["value"].where(
        ~((records["pe"] == "b") & (records["metric"] == "trained_length")), 8.0))  # b trained on rows of 8
    ratios = diagnostics.relative_lengths(longer[longer["split"] == "probe"]).groupby("pe")["ratio"].unique()
    assert sorted(ratios["a"]) == [1.0, 2.0] and sorted(ratios["b"]) == [0.5, 1.0]
    score = diagnostics.beyond_score(records, "t")
    assert score.label == "token accuracy beyond N" and score.higher_is_better
    assert diagnostics.beyond_score(records, "other") is None
    found, low, high = diagnostics.changes(rows, records, "t", ["attn_entropy_norm"], score)
    assert (low, high) == (1.0, 2.0) and list(found) == ["a", "b"]
    before, after = found["a"].diagnostics["attn_entropy_norm"]
    assert before["mean"] == 0.5 and after["mean"] == pytest.approx(0.75) and after["n"] == 2
    assert found["a"].score == [0.1, 0.1] and found["b"].score == [0.9, 0.9]


def test_the_reading_names_the_largest_rise_the_sink_and_the_ranking_only_where_scores_differ() -> None:
    """Entropy and first-token share of the queries within and beyond the training length, in the longest rows."""
    from pelab.analysis import diagnostics

    records = _probe_records()
    rows = diagnostics.relative_lengths(records[records["split"] == "probe"])
    binned = {("a", "attn_entropy_within"): 1.0, ("a", "attn_entropy_beyond"): 1.5, ("b", "attn_entropy_within"): 1.2,
              ("b", "attn_entropy_beyond"): 1.3, ("a", "first_token_share_beyond"): 0.1,
              ("b", "first_token_share_beyond"): 0.4, ("a", "first_token_share_within"): 0.1,
              ("b", "first_token_share_within"): 0.4}
    extra = pd.DataFrame([{"task": "t", "split": "probe", "length": "8", "metric": m, "value": v + 0.1 * k, "pe": pe,
                           "seed": k, "tokens": 8, "ratio": 2.0} for (pe, m), v in binned.items() for k in (0, 1)])
    rows = pd.concat([rows, extra], ignore_index=True)
    score = diagnostics.beyond_score(records, "t")
    found, _, _ = diagnostics.changes(rows, records, "t", sorted({m for _, m in binned}), score)
    r = diagnostics.reading(found, score)
    assert r.scores == pytest.approx({"a": 0.1, "b": 0.9}) and r.ranked == ["b", "a"] and r.rho is None  # 2 schemes
    assert r.rises == pytest.approx({"a": 0.5, "b": 0.1}) and (r.most, r.least) == ("a", "b")
    assert (r.sink, r.sink_value) == ("b", pytest.approx(0.45))
    same = diagnostics.reading({s: c._replace(score=[0.5, 0.5]) for s, c in found.items()}, score)
    assert same.ranked == [] and same.scores == {"a": 0.5, "b": 0.5}
    assert diagnostics.reading(found, None).scores == {} and diagnostics.reading(found, None).ranked == []
    # past the perfect extrapolator's rise by the margin (0.1 nats): a's +0.5 dilutes, b's +0.1 does not
    assert r.diluted == () and diagnostics.reading(found, score, null=0.057).diluted == ("a",)
    assert diagnostics.reading(found, score, null=0.45).diluted == ()


def test_rank_correlation_only_where_it_says_something() -> None:
    from pelab.analysis import diagnostics

    scores, rises = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}
    assert diagnostics.rank_correlation(scores, rises) == pytest.approx(-1.0)
    assert diagnostics.rank_correlation({k: scores[k] for k in "abc"}, rises) is None  # three schemes
    assert diagnostics.rank_correlation(scores, dict.fromkeys(rises, 0.1)) is None  # no rise differs


def test_slow_rotary_pairs_are_those_whose_period_exceeds_the_training_length() -> None:
    from pelab.analysis import diagnostics

    bands = pd.DataFrame([{"metric": f"rope_band_{f:02d}_{kind}", "seed": seed, "value": value}
                          for seed in (0, 1) for f, period, share in ((0, 6.0, 0.7), (1, 60.0, 0.2), (2, 600.0, 0.1))
                          for kind, value in (("period", period), ("share", share + 0.01 * seed))])
    n, shares = diagnostics.slow_pairs(bands, trained=50.0)
    assert n == 2 and shares == pytest.approx([0.3, 0.32])


def test_the_scored_steps_flag_seeds_still_improving_and_seeds_overfitting():
    import pandas as pd

    from pelab.analysis.selection import selection

    rows = []
    for seed, (best_step, best, last) in enumerate([(100, 2.0, 2.0), (60, 2.0, 2.2), (80, 2.0, 2.05)]):
        rows += [{"task": "copy", "pe": "rope", "seed": seed, "split": "train", "length": "all", "metric": "best_step",
                  "value": float(best_step)},
                 {"task": "copy", "pe": "rope", "seed": seed, "split": "train", "length": "all", "metric": "steps",
                  "value": 100.0},
                 {"task": "copy", "pe": "rope", "seed": seed, "split": "val", "length": "all", "metric": "loss",
                  "value": best},
                 {"task": "copy", "pe": "rope", "seed": seed, "split": "val", "length": "all", "metric": "loss_last",
                  "value": last}]
    chosen = selection(pd.DataFrame(rows), "copy", "rope")
    assert chosen.best_steps == [100, 60, 80] and chosen.steps == 100
    assert chosen.improving == 1  # seed 0: best at the last step
    assert chosen.overfitting == 1  # seed 1: 10% above its best; seed 2's 2.5% is within the 5% margin
    assert selection(pd.DataFrame(rows), "copy", "alibi") is None


def test_variants_are_grouped_by_family_each_against_its_base_schemes() -> None:
    """Issue 53: the trained schemes get their own tables and figures; each family of evaluation-time variants its
    own, every variant beside the scheme whose runs it reads."""
    from pelab.analysis.variants import families, family_rows

    names = ["rope+PI", "rope+yarn", "rope+logn", "alibi+logn", "rope+crop", "rope+spread", "rope+masked"]
    groups = families(names)
    assert list(groups) == ["RoPE's context extensions (HF names)", "the log-length temperature", "crop to L",
                            "recall's spread axis, plain and with its filler masked"]
    assert family_rows(groups["recall's spread axis, plain and with its filler masked"]) == [
        "rope", "rope+spread", "rope+masked"]
    assert family_rows(groups["RoPE's context extensions (HF names)"]) == ["rope", "rope+PI", "rope+yarn"]
    assert family_rows(groups["the log-length temperature"]) == ["rope", "rope+logn", "alibi", "alibi+logn"]
    assert families([]) == {}
