"""``rand_sinusoidal``: ``sinusoidal`` with randomized positions (Ruoss et al. 2023; see ``randomized``)."""

from pelab.positional.randomized import randomized
from pelab.positional.sinusoidal import SinusoidalPositionalEncoding

RandomizedSinusoidalPositionalEncoding = randomized(SinusoidalPositionalEncoding, "rand_sinusoidal")
