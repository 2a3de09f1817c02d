"""``rand_rope``: ``rope`` with randomized positions (Ruoss et al. 2023; see ``randomized``)."""

from pelab.positional.randomized import randomized
from pelab.positional.rope import RotaryPositionalEncoding

RandomizedRotaryPositionalEncoding = randomized(RotaryPositionalEncoding, "rand_rope")
