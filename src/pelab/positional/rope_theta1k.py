"""``rope_theta1k``: RoPE at θ = 10³, a point of the θ axis (``rope_theta.py``: the grid and its bounds)."""

from pelab.positional.rope_theta import rope_at

RopeTheta1K = rope_at("rope_theta1k", 1e3)
