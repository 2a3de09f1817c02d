"""``rope_theta100``: RoPE at θ = 100, a point of the θ axis (``rope_theta.py``: the grid and its bounds)."""

from pelab.positional.rope_theta import rope_at

RopeTheta100 = rope_at("rope_theta100", 100.0)
