"""``rope_sink``: RoPE with the ``sink`` switch in every self-attention layer (``pelab.model.switches``)."""

from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.switched import with_switches

RopeSink = with_switches("rope_sink", RotaryPositionalEncoding, "sink")
