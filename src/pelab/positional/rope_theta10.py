"""``rope_theta10``: RoPE at θ = 10, a point of the θ axis (``rope_theta.py``: the grid and its bounds)."""

from pelab.positional.rope_theta import rope_at

RopeTheta10 = rope_at("rope_theta10", 10.0)
