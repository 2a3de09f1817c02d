"""Layouts and partial RoPE against Hugging Face ``transformers``' own code, at distance: the rotated q·k logits of
both partial-rotary conventions at positions up to 8L, the per-layer NoPE and span semantics of the SmolLM3, Llama 4,
Cohere 2 (Command A), Gemma 3/4 and gpt-oss configs, Llama 4's NoPE-layer query temperature, and gpt-oss's YaRN
(HF's and OpenAI's own formula). These are where the bugs
users report live (HF #43756, #37344: NoPE flags inverted or ignored; #48652: partial conventions that agree at
position 0 and drift with distance): a short prompt hides them all."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from pelab.positional import build_positional_encoding
from pelab.positional import SCHEMES, is_layout
from pelab.positional.layout import Layout, llama4_query_scale, span_mask
from pelab.positional.rope_extensions import yarn_attention_factor as attention_factor
from pelab.positional.yarn import yarn_frequencies

transformers = pytest.importorskip("transformers")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.phi.modeling_phi import PhiRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402

L = 64  # the quick LM's training length
HEAD_DIM, HEADS = 32, 2
POSITIONS = torch.tensor([0, 1, 7, L - 1, L, 2 * L + 3, 4 * L - 1, 8 * L - 1])  # up to 8L


def hf_config(partial_rotary_factor: float, rope_type: str, theta: float):
    from transformers import PhiConfig

    return PhiConfig(hidden_size=HEAD_DIM * HEADS, num_attention_heads=HEADS,
                     rope_parameters={"rope_type": rope_type, "rope_theta": theta,
                                      "partial_rotary_factor": partial_rotary_factor})


def hf_logits(q: torch.Tensor, k: torch.Tensor, partial_rotary_factor: float, rope_type: str,
              theta: float) -> torch.Tensor:
    """q·k after HF's rotation, q, k (1, H, T, Dh) in HF's half-split layout. ``default``: the inverse frequencies
    of ``PhiRotaryEmbedding.compute_default_rope_parameters`` over the first int(f·Dh) dimensions, rotated by
    ``apply_rotary_pos_emb`` there and the rest passed (as ``PhiAttention`` splits q_rot, q_pass);
    ``proportional``: ``ROPE_INIT_FUNCTIONS['proportional']`` over the whole head."""
    config = hf_config(partial_rotary_factor, rope_type, theta)
    if rope_type == "proportional":
        inv_freq, _ = ROPE_INIT_FUNCTIONS["proportional"](config, "cpu")
        width = HEAD_DIM
    else:
        inv_freq, _ = PhiRotaryEmbedding.compute_default_rope_parameters(config, "cpu")
        width = int(HEAD_DIM * partial_rotary_factor)
    assert inv_freq.shape == (width // 2,)
    freqs = POSITIONS.double()[:, None] * inv_freq.double()[None]  # (T, width/2), as HF's forward in float
    emb = torch.cat([freqs, freqs], dim=-1)[None]  # (1, T, width)
    q_rot, k_rot = apply_rotary_pos_emb(q[..., :width], k[..., :width], emb.cos(), emb.sin())
    q = torch.cat([q_rot, q[..., width:]], dim=-1)
    k = torch.cat([k_rot, k[..., width:]], dim=-1)
    return q @ k.transpose(-2, -1)  # (1, H, T, T)


def half_split_to_interleaved(width: int) -> torch.Tensor:
    """Index map: pelab's dimension 2i, 2i+1 hold HF's i, i + width/2 for i < width/2; the rest keep their place."""
    half = width // 2
    order = torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).flatten()
    return torch.cat([order, torch.arange(width, HEAD_DIM)])


@pytest.mark.parametrize(("factor", "rope_type"), [(1.0, "default"), (0.5, "default"), (0.25, "default"),
                                                   (0.5, "proportional"), (0.25, "proportional")])
@pytest.mark.parametrize("theta", [1e4, 1e6])
def test_partial_rope_logits_match_hf_at_8L(factor: float, rope_type: str, theta: float) -> None:
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(1, HEADS, len(POSITIONS), HEAD_DIM, generator=generator, dtype=torch.float64)
    k = torch.randn(1, HEADS, len(POSITIONS), HEAD_DIM, generator=generator, dtype=torch.float64)
    expected = hf_logits(q, k, factor, rope_type, theta)
    width = HEAD_DIM if rope_type == "proportional" else int(HEAD_DIM * factor)
    index = half_split_to_interleaved(width)
    pe = build_positional_encoding("rope", d_model=HEAD_DIM * HEADS, n_heads=HEADS, causal=True,
                                   options={"base": theta, "partial_rotary_factor": factor, "rope_type": rope_type})
    q_ours, k_ours = pe.rotate(q[..., index], k[..., index], POSITIONS.double(), POSITIONS.double())
    # HF computes its inverse frequencies in float32 (relative error 6e-8: 3e-5 rad at 8L); a convention mixed up
    # is off by O(1) at distance (the next test)
    assert_close(q_ours @ k_ours.transpose(-2, -1), expected, rtol=1e-4, atol=1e-4)


def test_the_two_partial_conventions_agree_at_0_and_drift_with_distance() -> None:
    """HF #48652's symptom, measured: the same f = 0.25 read as ``default`` and as ``proportional``."""
    generator = torch.Generator().manual_seed(1)
    q = torch.randn(1, 1, len(POSITIONS), HEAD_DIM, generator=generator, dtype=torch.float64)
    k = q.clone()
    pes = [build_positional_encoding("rope", d_model=HEAD_DIM, n_heads=1, causal=True,
                                     options={"partial_rotary_factor": 0.25, "rope_type": t})
           for t in ("default", "proportional")]
    logits = [(lambda a, b: a @ b.transpose(-2, -1))(*pe.rotate(q, k, POSITIONS.double(), POSITIONS.double()))
              for pe in pes]
    gap = (logits[0] - logits[1]).abs()[0, 0]  # (T, T): query at row, key at column
    assert gap[0, 0] == 0 and gap.diagonal().abs().max() < 1e-9  # the same at distance 0
    assert gap[-1, 0] > 1.0  # 8L - 1 apart: far apart
    assert pes[0].rotation_frequencies()[4:].eq(0).all() and pes[1].rotation_frequencies()[4:].eq(0).all()
    assert pes[0].rotation_frequencies()[1] == pytest.approx(1e4 ** (-2 / 8))  # spectrum of an 8-dim head
    assert pes[1].rotation_frequencies()[1] == pytest.approx(1e4 ** (-2 / 32))  # the full-width spectrum


def layer_kinds(name: str, n_layers: int) -> list[tuple[bool, str]]:
    """pelab's layout per layer: (uses RoPE, span)."""
    pe = build_positional_encoding(name, d_model=HEAD_DIM * HEADS, n_heads=HEADS, causal=True, n_layers=n_layers)
    return [(pe.layer(i).spec.scheme == "rope", pe.layer(i).spec.span) for i in range(n_layers)]


@pytest.mark.parametrize("n_layers", [4, 8, 12])
def test_smollm3_and_llama4_nope_layers_are_hfs(n_layers: int) -> None:
    """``no_rope_layers[i]`` is 1 where layer i uses RoPE (HF's convention, inverted in #43756's reports)."""
    from transformers import Llama4TextConfig, SmolLM3Config

    smol = SmolLM3Config(num_hidden_layers=n_layers, hidden_size=64, num_attention_heads=2)
    assert [rope for rope, _ in layer_kinds("smollm3", n_layers)] == [bool(x) for x in smol.no_rope_layers]
    assert {span for _, span in layer_kinds("smollm3", n_layers)} == {"full"} and set(smol.layer_types) == {
        "full_attention"}
    llama = Llama4TextConfig(num_hidden_layers=n_layers, hidden_size=64, num_attention_heads=2,
                             intermediate_size=32, intermediate_size_mlp=32)
    kinds = layer_kinds("llama4", n_layers)
    assert [rope for rope, _ in kinds] == [bool(x) for x in llama.no_rope_layers]
    assert [span for _, span in kinds] == [{"chunked_attention": "chunked", "full_attention": "full"}[t]
                                           for t in llama.layer_types]


@pytest.mark.parametrize("n_layers", [4, 6, 12])
def test_command_a_and_gemma_spans_are_hfs(n_layers: int) -> None:
    from transformers import Cohere2Config, Gemma3TextConfig

    spans = {"sliding_attention": "sliding", "full_attention": "full"}
    cohere = Cohere2Config(num_hidden_layers=n_layers)
    assert [(rope, span) for rope, span in layer_kinds("command_a", n_layers)] == [
        (t == "sliding_attention", spans[t]) for t in cohere.layer_types]  # RoPE on the sliding layers only
    if n_layers >= 6:  # shallower than Gemma 3's period: pelab's rule (the next test), HF's config has no global layer
        gemma = Gemma3TextConfig(num_hidden_layers=n_layers)
        assert [span for _, span in layer_kinds("gemma3", n_layers)] == [spans[t] for t in gemma.layer_types]


@pytest.mark.parametrize("n_layers", [2, 4, 6, 8, 12])
def test_gemma4_spans_are_hfs_with_its_last_layer_always_global(n_layers: int) -> None:
    from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig

    spans = {"sliding_attention": "sliding", "full_attention": "full"}
    gemma = Gemma4TextConfig(num_hidden_layers=n_layers)
    assert [span for _, span in layer_kinds("gemma4", n_layers)] == [spans[t] for t in gemma.layer_types]


def test_a_stack_shallower_than_the_period_keeps_its_last_layer_global() -> None:
    """pelab's rule for the profiles' 2-layer models (HF's configs would give them no NoPE layer at all; HF's
    Gemma 4 config forces the last layer to full attention likewise)."""
    assert layer_kinds("smollm3", 2) == [(True, "full"), (False, "full")]
    assert layer_kinds("command_a", 2) == [(True, "sliding"), (False, "full")]
    assert layer_kinds("gemma3", 4) == [(True, "sliding")] * 3 + [(True, "full")]
    assert layer_kinds("llama4", 1) == [(False, "full")]


def test_gemma_presets_take_hfs_thetas_and_p_rope() -> None:
    from transformers import Gemma3TextConfig

    gemma = Gemma3TextConfig(num_hidden_layers=6)
    thetas = {t: gemma.rope_parameters[t]["rope_theta"] for t in ("sliding_attention", "full_attention")}
    pe = build_positional_encoding("gemma3", d_model=64, n_heads=2, causal=True, n_layers=6)
    assert [pe.layer(i).inner.base for i in (0, 5)] == [thetas["sliding_attention"], thetas["full_attention"]]
    g4 = build_positional_encoding("gemma4", d_model=64, n_heads=2, causal=True, n_layers=6).layer(5).inner
    from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig

    full = Gemma4TextConfig().rope_parameters["full_attention"]
    assert (g4.rope_type, g4.partial_rotary_factor, g4.base) == (full["rope_type"], full["partial_rotary_factor"],
                                                                  full["rope_theta"])


def test_llama4_query_temperature_is_hfs_formula_at_distance() -> None:
    """HF ``Llama4TextAttention.forward``: scales = log1p(floor((p + 1) / floor_scale)) * attn_scale + 1 on NoPE
    layers' queries; pelab's preset keeps floor_scale equal to the chunk, as HF's defaults (8,192 both)."""
    from transformers import Llama4TextConfig

    config = Llama4TextConfig()
    assert config.floor_scale == config.attention_chunk_size == 8192 and config.attn_scale == 0.1
    positions = torch.tensor([0, 14, 15, 16, 31, 32, 8 * L - 1])
    scale = llama4_query_scale(positions, 0.1, 16.0)
    expected = torch.log1p(torch.floor((positions.float() + 1.0) / 16.0)) * 0.1 + 1.0
    assert_close(scale, expected, rtol=0, atol=0)
    assert scale[:2].eq(1).all() and scale[2] == pytest.approx(1 + 0.1 * torch.log(torch.tensor(2.0)).item())
    pe = build_positional_encoding("llama4", d_model=64, n_heads=2, causal=True, n_layers=4)
    q = torch.ones(1, 2, len(positions), 32)
    rope_q, _ = pe.layer(0).rotate(q, q, positions, positions)
    nope_q, _ = pe.layer(3).rotate(q, q, positions, positions)
    assert_close(nope_q[0, 0, :, 0], scale)  # the NoPE layer: queries scaled, nothing rotated
    assert_close(rope_q.norm(dim=-1)[0, 0], q.norm(dim=-1)[0, 0])  # the RoPE layer: rotated, not scaled


def test_span_masks_are_hfs_sliding_and_chunked_masks() -> None:
    """HF ``masking_utils``: sliding ``kv_idx > q_idx - sliding_window`` (and causal), chunked
    ``kv_idx // chunk == q_idx // chunk`` (and causal). Bidirectional sliding is pelab's own rule, |i - j| < window
    (HF's generic bidirectional mask allows |i - j| <= window; Gemma's halves the window first)."""
    positions = torch.arange(8 * L)
    q, k = positions[:, None], positions[None, :]
    for window in (1, 16):
        sliding = span_mask("sliding", window, positions, positions, causal=True) == 0
        assert torch.equal(sliding, (k > q - window) & (k <= q))
        chunked = span_mask("chunked", window, positions, positions, causal=True) == 0
        assert torch.equal(chunked & (k <= q), (k // window == q // window) & (k <= q))
        both = span_mask("sliding", window, positions, positions, causal=False) == 0
        assert torch.equal(both, (q - k).abs() < window)
    assert span_mask("full", 0, positions, positions, causal=True) is None


def test_every_preset_is_a_spec_of_the_one_layout_class_naming_its_source() -> None:
    layouts = {name: spec for name, spec in SCHEMES.items() if is_layout(name)}
    assert list(layouts) == ["smollm3", "command_a", "llama4", "gemma3", "gemma4", "gpt_oss",
                            "swan"]
    for name, spec in layouts.items():
        assert spec.about and spec.cls is Layout and {"period", "layer", "nth_layer"} <= set(spec.defaults)


def gpt_oss_config(head_dim: int, original: int, truncate: bool = False, n_layers: int = 4):
    """HF's gpt-oss config at a head of ``head_dim`` with YaRN over ``original`` positions (its other values kept)."""
    from transformers import GptOssConfig

    rope = {**GptOssConfig().rope_parameters, "original_max_position_embeddings": original, "truncate": truncate}
    return GptOssConfig(num_hidden_layers=n_layers, hidden_size=head_dim * HEADS, num_attention_heads=HEADS,
                        num_key_value_heads=HEADS, head_dim=head_dim, rope_parameters=rope)


@pytest.mark.parametrize("head_dim", [16, 32, 64])
@pytest.mark.parametrize("original", [L, 4096])
@pytest.mark.parametrize("truncate", [False, True])
def test_yarn_frequencies_and_factor_are_hfs(head_dim: int, original: int, truncate: bool) -> None:
    config = gpt_oss_config(head_dim, original, truncate)
    inv_freq, factor = ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
    rope = config.rope_parameters
    ours = yarn_frequencies(head_dim, rope["rope_theta"], rope["factor"], original, rope["beta_fast"],
                            rope["beta_slow"], truncate, torch.float64)
    assert_close(ours, inv_freq.double(), rtol=1e-6, atol=0)  # HF's in float32
    assert attention_factor(rope["factor"]) == pytest.approx(factor, rel=1e-12)
    ratio = ours / rope["rope_theta"] ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # θ'/θ
    assert ratio[-1] == pytest.approx(1 / rope["factor"])  # the slowest pair interpolated by s
    if original == 4096:
        assert ratio[0] == pytest.approx(1.0)  # the fastest kept (over L = 64 no pair turns 32 times)


def test_yarn_at_gpt_oss_size_is_openais_formula() -> None:
    """``openai/gpt-oss`` ``RotaryEmbedding._compute_concentration_and_inv_freq`` at its ModelConfig (head 64, θ 1.5e5,
    4,096 positions, s 32, α 1, β 32), transcribed: no rounding, no clamp (its ends lie inside the head there)."""
    import math

    d_half, base, length, s = 32, 150000.0, 4096, 32.0
    low = d_half * math.log(length / (32.0 * 2 * math.pi)) / math.log(base)
    high = d_half * math.log(length / (1.0 * 2 * math.pi)) / math.log(base)
    assert 0 < low < high < d_half - 1
    freq = base ** (torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    mask = 1 - ((torch.arange(d_half, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    expected = 1.0 / (s * freq) * (1 - mask) + 1.0 / freq * mask
    assert_close(yarn_frequencies(64, base, s, length, dtype=torch.float64), expected, rtol=1e-12, atol=0)
    assert attention_factor(s) == 0.1 * math.log(s) + 1.0


@pytest.mark.parametrize("n_layers", [2, 4, 6])
def test_gpt_oss_layers_are_hfs_sliding_then_full_all_yarn_with_sinks(n_layers: int) -> None:
    config = gpt_oss_config(HEAD_DIM, L, n_layers=n_layers)
    pe = build_positional_encoding("gpt_oss", d_model=HEAD_DIM * HEADS, n_heads=HEADS, causal=True,
                                   n_layers=n_layers)
    spans = {"sliding_attention": "sliding", "full_attention": "full"}
    assert [pe.layer(i).spec.span for i in range(n_layers)] == [spans[t] for t in config.layer_types]
    assert {pe.layer(i).spec.scheme for i in range(n_layers)} == {"yarn"} and pe.switches == ("sink",)
    assert {pe.layer(i).spec.window for i in range(0, n_layers, 2)} == {16}  # 128 in gpt-oss; 16 in every layout here


def test_gpt_oss_yarn_layer_logits_match_hfs_rotary_at_8L() -> None:
    """q·k after HF's ``GptOssRotaryEmbedding`` (cos and sin times its attention scaling) and ``apply_rotary_pos_emb``
    (half-split), against the preset's layer with YaRN over L positions, in pelab's interleaved layout."""
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssRotaryEmbedding, apply_rotary_pos_emb

    config = gpt_oss_config(HEAD_DIM, L)
    generator = torch.Generator().manual_seed(2)
    q = torch.randn(1, HEADS, len(POSITIONS), HEAD_DIM, generator=generator, dtype=torch.float64)
    k = torch.randn(1, HEADS, len(POSITIONS), HEAD_DIM, generator=generator, dtype=torch.float64)
    cos, sin = GptOssRotaryEmbedding(config)(q, POSITIONS[None])  # (1, T, Dh/2) each
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos.double(), sin.double())
    pe = build_positional_encoding("gpt_oss", d_model=HEAD_DIM * HEADS, n_heads=HEADS, causal=True, n_layers=2,
                                   options={"layer": {"original_length": L}, "nth_layer": {"original_length": L}})
    index = half_split_to_interleaved(HEAD_DIM)
    for layer in (0, 1):
        q_ours, k_ours = pe.layer(layer).rotate(q[..., index], k[..., index], POSITIONS.double(), POSITIONS.double())
        assert_close(q_ours @ k_ours.transpose(-2, -1), q_hf @ k_hf.transpose(-2, -1), rtol=1e-4, atol=1e-4)
