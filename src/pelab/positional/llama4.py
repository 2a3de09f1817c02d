"""``llama4``: chunked-attention RoPE layers and, every 4th, a full-attention NoPE layer whose queries take a
log-position temperature (Meta's Llama 4, 2025; HF ``Llama4TextConfig``: ``no_rope_layer_interval`` 4,
``attention_chunk_size``, ``attn_temperature_tuning``, ``floor_scale``, ``attn_scale``; the temperature in
``Llama4TextAttention.forward``). ``floor_scale`` equals the chunk, as HF's defaults do (8,192 both); Llama 4's
QK-norm on its RoPE layers is not reproduced."""

from pelab.positional.layout import LOCAL_WINDOW, preset

Llama4Layout = preset(
    "llama4", "Llama 4 (HF Llama4TextConfig: no_rope_layer_interval = 4, attention_chunk_size, "
    "attn_temperature_tuning): chunked-attention RoPE layers and full-attention NoPE layers whose queries take a "
    "log-position temperature (QK-norm on the RoPE layers is not reproduced)", 4,
    {"scheme": "rope", "span": "chunked", "window": LOCAL_WINDOW},
    {"scheme": "none", "attn_scale": 0.1, "floor_scale": float(LOCAL_WINDOW)})
