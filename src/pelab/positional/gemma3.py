"""``gemma3``: five sliding-window RoPE layers (θ = 10⁴) to one global RoPE layer (θ = 10⁶) (Gemma Team 2025,
https://arxiv.org/abs/2503.19786; HF ``Gemma3TextConfig``: ``sliding_window_pattern`` 6, ``rope_local_base_freq``
10⁴, ``rope_theta`` 10⁶)."""

from pelab.positional.layout import LOCAL_WINDOW, preset

Gemma3Layout = preset(
    "gemma3", "Gemma 3 (Gemma Team 2025, arXiv 2503.19786; HF Gemma3TextConfig: sliding_window_pattern = 6): five "
    "sliding-window RoPE layers (θ = 10⁴) to one global RoPE layer (θ = 10⁶)", 6,
    {"scheme": "rope", "base": 1e4, "span": "sliding", "window": LOCAL_WINDOW}, {"scheme": "rope", "base": 1e6})
