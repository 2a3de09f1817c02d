"""``rope_gate``: RoPE with the ``gate`` switch in every self-attention layer (``pelab.model.switches``)."""

from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.switched import with_switches

RopeGate = with_switches("rope_gate", RotaryPositionalEncoding, "gate")
