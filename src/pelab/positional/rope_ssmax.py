"""``rope_ssmax``: RoPE with the ``ssmax`` switch in every self-attention layer (``pelab.model.switches``)."""

from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.switched import with_switches

RopeSsmax = with_switches("rope_ssmax", RotaryPositionalEncoding, "ssmax")
