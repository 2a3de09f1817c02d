"""``smollm3``: RoPE in every layer but every 4th, which has no positional encoding (SmolLM3, Hugging Face 2025;
HF ``SmolLM3Config``: ``no_rope_layer_interval`` 4, ``no_rope_layers[i]`` 1 where layer i uses RoPE; θ kept at
pelab's 10⁴, SmolLM3's own is sized for its 64k context)."""

from pelab.positional.layout import preset

SmolLM3Layout = preset(
    "smollm3", "SmolLM3 (HF SmolLM3Config: no_rope_layer_interval = 4): RoPE in every layer but every 4th, which has "
    "no positional encoding", 4, {"scheme": "rope"}, {"scheme": "none"})
