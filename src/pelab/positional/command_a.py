"""``command_a``: three sliding-window RoPE layers to one full-attention NoPE layer (Cohere's Command A, 2025; the
RNoPE-SWA pattern of Yang et al. 2025, "Rope to Nope and Back Again", https://arxiv.org/abs/2501.18795; HF
``Cohere2Config``: ``sliding_window_pattern`` 4, RoPE on the sliding layers only)."""

from pelab.positional.layout import LOCAL_WINDOW, preset

CommandALayout = preset(
    "command_a", "Command A (Cohere 2025) after Yang et al. 2025, arXiv 2501.18795 (HF Cohere2Config: "
    "sliding_window_pattern = 4): three sliding-window RoPE layers to one full-attention NoPE layer", 4,
    {"scheme": "rope", "span": "sliding", "window": LOCAL_WINDOW}, {"scheme": "none"})
