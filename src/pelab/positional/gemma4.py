"""``gemma4``: Gemma 3's pattern with p-RoPE on the global layer, and the last layer global at every depth (HF
``Gemma4TextConfig``'s defaults: full-attention layers ``rope_type`` proportional, ``partial_rotary_factor`` 0.25,
θ = 10⁶; the config forces the last layer to full attention). Gemma 4's global layers also have wider heads
(``global_head_dim`` 512 against 256); pelab's layers share one head size."""

from pelab.positional.layout import LOCAL_WINDOW, preset

Gemma4Layout = preset(
    "gemma4", "Gemma 4 (HF Gemma4TextConfig's defaults): Gemma 3's pattern with p-RoPE on the global layer (rope_type "
    "proportional, partial_rotary_factor 0.25, θ = 10⁶) and the last layer global at every depth (its wider global "
    "heads are not reproduced)", 6,
    {"scheme": "rope", "base": 1e4, "span": "sliding", "window": LOCAL_WINDOW},
    {"scheme": "rope", "base": 1e6, "rope_type": "proportional", "partial_rotary_factor": 0.25}, last_global=True)
