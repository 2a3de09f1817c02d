"""``rope_theta1m``: RoPE at θ = 10⁶, a point of the θ axis (``rope_theta.py``: the grid and its bounds)."""

from pelab.positional.rope_theta import rope_at

RopeTheta1M = rope_at("rope_theta1m", 1e6)
