"""``rand_learned``: ``learned`` with randomized positions (Ruoss et al. 2023; see ``randomized``)."""

from pelab.positional.learned import LearnedPositionalEncoding
from pelab.positional.randomized import randomized

RandomizedLearnedPositionalEncoding = randomized(LearnedPositionalEncoding, "rand_learned", max_positions=512)
