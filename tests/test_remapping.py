"""The training-free remappings of RoPE's distances (``pelab.positional.remapping``): each against its formula and the
reference's construction, the trained model where they promise it, and in the evaluation menu of every RoPE run."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from pelab.model.config import ModelConfig
from pelab.model.sequence import build_sequence_model
from pelab.positional import build_positional_encoding, scheme_options
from pelab.positional.functional import rope_rotate
from pelab.positional.remapping import REMAPPINGS, Remapping, RemappedRotary
from pelab.positional.variants import evaluation_variants

RE_ROPE, SELF_EXTEND, STREAMING = REMAPPINGS
HEAD = 8


def trained(causal: bool = True):
    return build_positional_encoding("rope", d_model=2 * HEAD, n_heads=2, causal=causal)


def by_distance(pe, q: torch.Tensor, k: torch.Tensor, distance: torch.Tensor) -> torch.Tensor:
    """q_iᵀ R(δ_ij) k_j / √d for a matrix of distances δ (Tq, Tk): the query rotated by δ, the key unrotated."""
    out = torch.empty(*q.shape[:2], *distance.shape)
    for i in range(distance.shape[0]):
        for j in range(distance.shape[1]):
            angle = pe.angles(distance[i, j].reshape(1))  # (1, Dh/2)
            out[:, :, i, j] = (rope_rotate(q[:, :, i:i + 1], angle) * k[:, :, j:j + 1]).sum(-1)[..., 0]
    return out / math.sqrt(HEAD)


def qk(t: int):
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 2, t, HEAD, generator=g), torch.randn(2, 2, t, HEAD, generator=g)


@pytest.mark.parametrize("causal", [True, False])
def test_rerope_reads_every_distance_from_w_on_as_w(causal):
    pe, (q, k) = trained(causal), qk(13)
    remapped = RemappedRotary(pe, window=4, group=None)
    pos = torch.arange(13)
    d = pos[:, None] - pos[None, :]
    expected = by_distance(pe, q, k, d.clamp(-4, 4))  # min(d, w), and max(d, −w) to the right
    if causal:
        expected = torch.where(d < 0, remapped.logits(q, k, pos, pos), expected)  # masked anyway in a causal model
    assert_close(remapped.logits(q, k, pos, pos), expected, atol=1e-5, rtol=1e-5)


def test_rerope_scales_each_query_beyond_l_by_log_n_as_its_reference_does():
    """bojone/rerope: q_i × max(1, ln(i + 1) / ln L) before both rotations, so every logit of row i scales by it: 1 on
    the trained positions (i < L), ln(i + 1) / ln L beyond."""
    pe, (q, k) = trained(), qk(40)
    pos = torch.arange(40)
    plain = RemappedRotary(pe, window=2, group=None)
    scaled = RE_ROPE.module(pe, 40, 16, 40)
    assert (scaled.window, scaled.log_n) == (2, 16)
    factor = ((pos.double() + 1).log() / math.log(16)).clamp(min=1.0)
    assert torch.equal(factor[:16], torch.ones(16)) and factor[39] == pytest.approx(math.log(40) / math.log(16))
    scaled_q = q * factor.float()[:, None]  # the reference scales the query itself
    assert_close(scaled.logits(q, k, pos, pos), plain.logits(scaled_q, k, pos, pos), atol=1e-5, rtol=1e-5)


def reference_neighbour_mask(t: int, window: int) -> torch.Tensor:
    """datamllab/LongLM's neighbour mask for a whole row (q_len = kv_seq_len), as its Llama patch builds it."""
    mask = torch.tril(torch.ones(t, t))
    if t - window > 0:
        mask[window:, :-window] -= torch.tril(torch.ones(t - window, t - window))
    return mask.bool()


def test_self_extend_is_the_references_neighbour_and_group_logits():
    pe, (q, k) = trained(), qk(21)
    window, group = 6, 3
    remapped = RemappedRotary(pe, window=window, group=group)
    pos = torch.arange(21)
    d = pos[:, None] - pos[None, :]
    near = reference_neighbour_mask(21, window)
    grouped = pos[:, None] // group - pos[None, :] // group + window - window // group
    expected = by_distance(pe, q, k, torch.where(near, d, grouped))
    causal = d >= 0  # the reference's causal mask: the entries that count
    assert_close(remapped.logits(q, k, pos, pos)[..., causal], expected[..., causal], atol=1e-5, rtol=1e-5)


def test_self_extend_mirrors_to_the_right_in_an_encoder():
    pe, (q, k) = trained(False), qk(15)
    remapped = RemappedRotary(pe, window=4, group=2)
    pos = torch.arange(15)
    d = pos[:, None] - pos[None, :]
    left = pos[:, None] // 2 - pos[None, :] // 2 + 2
    right = pos[:, None] // 2 - pos[None, :] // 2 - 2
    expected = by_distance(pe, q, k, torch.where(d.abs() < 4, d, torch.where(d > 0, left, right)))
    assert_close(remapped.logits(q, k, pos, pos), expected, atol=1e-5, rtol=1e-5)


def reference_streaming_logits(pe, q: torch.Tensor, k: torch.Tensor, sinks: int, window: int) -> torch.Tensor:
    """mit-han-lab/streaming-llm's cache, built query by query: the first ``sinks`` keys and the ``window`` most recent
    (the query's own included), each rotated at its place in the cache, the query at its own; −inf for a dropped key
    (and for the future, which a causal model masks)."""
    t = q.shape[2]
    out = torch.full((*q.shape[:2], t, t), float("-inf"))
    for i in range(t):
        cached = sorted(set(range(min(sinks, i + 1))) | set(range(max(0, i - window + 1), i + 1)))
        where = torch.arange(len(cached))  # positions in the cache (the reference's position shift)
        q_i, k_c = pe.rotate(q[:, :, i:i + 1], k[:, :, cached], where[-1:], where)
        out[:, :, i, cached] = (q_i @ k_c.transpose(-2, -1))[:, :, 0] / math.sqrt(HEAD)
    return out


def test_streaming_llm_is_the_references_cache_with_its_position_shift():
    pe, (q, k) = trained(), qk(23)
    sinks, window = 3, 5
    remapped = RemappedRotary(pe, window=window, group=None, sinks=sinks)
    pos = torch.arange(23)
    got, expected = remapped.logits(q, k, pos, pos), reference_streaming_logits(pe, q, k, sinks, window)
    causal = (pos[:, None] - pos[None, :]) >= 0  # the entries a causal model reads
    assert torch.equal(torch.isinf(got[..., causal]), torch.isinf(expected[..., causal]))
    kept = ~torch.isinf(expected) & causal
    assert_close(got[kept], expected[kept], atol=1e-5, rtol=1e-5)
    assert int(torch.isfinite(got[0, 0, 22][:23]).sum()) == sinks + window  # a full cache: s + w keys
    assert STREAMING.module(trained(), 512, 64, 512).window == 60 and STREAMING.module(trained(), 512, 64, 512).sinks == 4


@pytest.mark.parametrize("length", [64, 100, 256, 512])
def test_the_settings_keep_every_remapped_distance_under_l_and_self_extend_is_the_model_up_to_l(length):
    trained_length = 64
    for remapping in (RE_ROPE, SELF_EXTEND):
        pe = remapping.module(trained(), length, trained_length, 512)
        assert pe.window == (8 if remapping is RE_ROPE else 32)  # ReRoPE's reference: w = 512 of L = 4,096
        pos = torch.arange(length)
        q_at, k_at = pe.far_positions(pos, pos, 1)
        d = pos[:, None] - pos[None, :]
        far = q_at[:, None] - k_at[None, :]
        assert int(torch.where(d >= pe.window, far, d).max()) < trained_length
    assert SELF_EXTEND.module(trained(), 64, 64, 512).group == 1
    assert SELF_EXTEND.identity_within and STREAMING.identity_within and not RE_ROPE.identity_within


def test_a_remapped_model_reads_as_its_formula_whole_and_token_by_token():
    """On a causal model: up to w + 1 tokens, w = L/8 (ReRoPE: a distance of w reads as w), or L (Self-Extend) the
    trained model; the whole row equals incremental decoding (the cache keeps its keys' positions), as every LM
    evaluation reads it."""
    model = build_sequence_model("rope", 11, ModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32),
                                 scheme_options("rope"), 0, causal=True).eval()
    x = torch.randint(0, 11, (2, 40), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        plain, _ = model(x)
        for remapping, same_up_to in ((RE_ROPE, 3), (SELF_EXTEND, 16), (STREAMING, 16)):
            for length in (same_up_to, 40):
                read = model.with_positional(remapping.module(model.pe, length, 16, 40))
                whole, _ = read(x[:, :length])
                caches, pos = read.new_caches(), torch.arange(length)
                steps = [read.extend(x[:, :3], caches, pos[:3])]
                steps += [read.extend(x[:, t:t + 1], caches, pos[:t + 1]) for t in range(3, length)]
                assert_close(torch.cat(steps, 1), whole, atol=2e-5, rtol=1e-5)
                if length == same_up_to:
                    assert_close(whole, plain[:, :length], atol=2e-5, rtol=1e-5)
                else:
                    assert not torch.allclose(whole, plain[:, :length], atol=1e-3)


def test_every_rope_run_is_scored_with_both_and_xpos_and_partial_rope_with_neither():
    menu = evaluation_variants(trained())
    assert [v.suffix for v in menu][-3:] == ["_rerope", "_selfextend", "_streaming"]
    assert all(isinstance(v, Remapping) for v in menu[-3:])
    assert not evaluation_variants(build_positional_encoding("xpos", d_model=16, n_heads=2, causal=True))
    partial = build_positional_encoding("rope", d_model=16, n_heads=2, options={"partial_rotary_factor": 0.5})
    assert not evaluation_variants(partial)
    with pytest.raises(TypeError, match="not extended again"):
        RE_ROPE.module(trained(), 40, 16, 40).extended(interpolation_factor=2.0)


def test_the_length_study_leaves_the_remappings_to_the_lm(tmp_path):
    """The LM scores them (perplexity and passkey beyond L); the length study's rope runs keep HF's extensions."""
    from conftest import smoke_raw

    from pelab.params import parse_params
    from pelab.tasks import get_task
    from pelab.tasks.length import data as length_data
    from pelab.tasks.length.evaluate import evaluate

    task = get_task("reverse")
    cfg = parse_params(smoke_raw(tasks=[], length_tasks=["reverse"], length_schemes=["rope"])).task("reverse")
    task.prepare(cfg, tmp_path / "data")
    data = length_data.load(tmp_path / "data")
    model = task.build_model(cfg.model, "rope", cfg.options("rope"), 0, task.data_info(data))
    rows = evaluate(cfg, model, data, torch.device("cpu"), causal=False, row_length=lambda n: task.row_length(cfg.data, n))
    # (the decoder's menu is the same: tests/test_length.py counts every extension it reads)
    splits = {r["split"] for r in rows}
    assert "test_pi" in splits and "test_yarn" in splits and not {"test_rerope", "test_selfextend", "test_streaming"} & splits
