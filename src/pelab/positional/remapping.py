"""Training-free remappings of RoPE's relative positions, scored beside HF's context extensions (``rope_extensions``):
a trained ``rope`` model reads a row longer than its training length L with every relative distance d = i − j it
meets mapped into the range it was trained on, the nearest keys (|d| < w) left exact.

* ``ReRoPE`` (Su 2023, https://kexue.fm/archives/9708; reference bojone/rerope, ``rerope_patch.py``): distances from
  w on read as w: the logit of a far key is q_i rotated to position w against k_j at position 0; and, as the
  reference does, every query q_i scaled by max(1, ln(i + 1) / ln L) before either rotation (log-n scaling: 1 on the
  trained positions), with w = L/8 (the reference's 512 for 4,096).
* ``SelfExtend`` (Jin et al., ICML 2024, https://arxiv.org/abs/2401.01325, eq. 3–4; reference datamllab/LongLM,
  ``self_extend_patch/Llama.py``): far keys grouped by floor division by G, the query shifted so that the groups
  continue from the neighbour window: d → ⌊i/G⌋ − ⌊j/G⌋ + w − ⌊w/G⌋ for d ≥ w (as the reference's flash path
  computes it, integer division throughout).

* ``StreamingLLM`` (Xiao et al., ICLR 2024, https://arxiv.org/abs/2309.17453; reference mit-han-lab/streaming-llm,
  ``kv_cache.py`` ``StartRecentKVCache`` and its position shift): a cache of L entries counting the query's own
  token, the first s = 4 tokens (the attention sinks) and the w = L − s most recent; every other key is dropped, and
  positions are those in the cache, so a window key keeps its distance and a sink j reads at (L − 1) − j. (In the
  reference's terms a cache of L − 1 past keys plus the incoming token, as ``evict_for_space`` counts it: a cache of L
  past keys would read sink 0 at distance L, one beyond the trained range.) LM-Infinite's Λ-shaped mask (Han et al.,
  NAACL 2024) has the same shape, starting tokens and a local window, with far distances capped at L instead of read
  at their places in a cache. Within L no key is dropped: the trained model.
  Retrieval of a key more than w back scores zero by construction, as crop does; perplexity is the question.

pelab's settings, the same for every run: w = L/8 for ReRoPE (its reference's), L/2 for Self-Extend (StreamingLLM:
L − 4), and Self-Extend's G the smallest group size that keeps every
remapped distance of a row of T tokens under L, ⌊(T − 1)/G⌋ + w − ⌊w/G⌋ ≤ L − 1 (about (T − w)/(L − w): the paper's
longest reach (L − w)·G + w), so G = 1 and Self-Extend is the trained model for T ≤ L, while ReRoPE changes distances from w on at every length.
The LM scores them (perplexity and passkey retrieval beyond L, as their papers judge them); the length study does not
(``Remapping.in_length_study``: the suite's time). ``RemappedRotary`` remaps a key to the right of its query (d < 0)
the mirror way where it is built bidirectional (the references are causal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pelab.positional.rope import RotaryPositionalEncoding


class RemappedRotary(RotaryPositionalEncoding):
    """A trained ``rope`` module whose relative distances from ``window`` on are remapped: clamped to ``window``
    (``group`` None: ReRoPE) or grouped by ``group`` (Self-Extend). Evaluation only; its queries and keys are rotated
    inside ``logits``, near and far, and the two logits chosen by distance; ``log_n`` > 0 (ReRoPE's reference: the
    trained length L) scales query i's logits by max(1, ln(i + 1) / ln L)."""

    def __init__(self, trained: RotaryPositionalEncoding, window: int, group: int | None, sinks: int = 0,
                 log_n: int = 0) -> None:
        super().__init__(d_model=trained.d_model, n_heads=trained.n_heads, causal=trained.causal,
                         n_layers=trained.n_layers, **vars(trained.options()))
        self.window, self.group, self.sinks, self.log_n = window, group, sinks, log_n

    def query_scale(self, q_pos: torch.Tensor) -> torch.Tensor:
        """(Tq,) -> (Tq, 1): bojone/rerope's log-n factor max(1, ln(i + 1) / ln L) (1 where ``log_n`` is below 2)."""
        if self.log_n < 2:
            return torch.ones(q_pos.shape[0], 1, device=q_pos.device)
        return ((q_pos.double() + 1).log() / math.log(self.log_n)).clamp(min=1.0).float()[:, None]

    def rotate(self, q, k, q_pos, k_pos):
        return q, k  # rotated in ``logits``, at the remapped positions

    def _dot(self, q: torch.Tensor, k: torch.Tensor, q_at: torch.Tensor, k_at: torch.Tensor) -> torch.Tensor:
        q, k = super().rotate(q, k, q_at, k_at)
        return q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, Tq, Tk)

    def far_positions(self, q_pos: torch.Tensor, k_pos: torch.Tensor, sign: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The positions that give a key at distance ``sign``·d ≥ w its remapped distance: (Tq,), (Tk,)."""
        w = self.window
        if self.group is None:  # ReRoPE: every far distance reads as w
            return torch.full_like(q_pos, sign * w), torch.zeros_like(k_pos)
        g = self.group
        return q_pos.div(g, rounding_mode="floor") + sign * (w - w // g), k_pos.div(g, rounding_mode="floor")

    def logits(self, q, k, q_pos, k_pos):
        distance = q_pos[:, None] - k_pos[None, :]  # (Tq, Tk)
        if self.sinks:
            return self._cached(q, k, q_pos, k_pos, distance)
        out = torch.where(distance.abs() < self.window, self._dot(q, k, q_pos, k_pos),
                          self._dot(q, k, *self.far_positions(q_pos, k_pos, 1)))
        if not self.causal:  # keys to the right: the mirror remapping
            out = torch.where(distance <= -self.window, self._dot(q, k, *self.far_positions(q_pos, k_pos, -1)), out)
        return out * self.query_scale(q_pos).to(out) if self.log_n >= 2 else out

    def _cached(self, q, k, q_pos, k_pos, distance: torch.Tensor) -> torch.Tensor:
        """StreamingLLM: the sinks (k_pos < s) and the window (|d| < w) kept, the rest −inf; a sink read from the
        query's place in a full cache of s + w entries, at most s + w − 1 (both directions: an encoder's row is read as
        if cached from either end)."""
        kept = distance.abs() < self.window
        out = self._dot(q, k, q_pos, k_pos)
        at = q_pos.clamp(max=self.sinks + self.window - 1)  # the query's position in the cache
        cols = (k_pos < self.sinks).nonzero().squeeze(1)  # the sinks' columns: only they are read from the cache
        sink = torch.zeros_like(kept)
        sink[:, cols] = ~kept[:, cols]
        out[..., cols] = torch.where(sink[:, cols], self._dot(q, k[..., cols, :], at, k_pos[cols]), out[..., cols])
        return out.masked_fill(~(kept | sink), float("-inf"))

    def extended(self, **options) -> RotaryPositionalEncoding:
        raise TypeError("a remapped RoPE module is not extended again: remap the trained module")


@dataclass(frozen=True)
class Remapping:
    """A row of the evaluation menu (the interface of ``rope_extensions.Variant``): records under split suffix
    ``suffix``, shown as ``rope+<label>``; ``grouped``: Self-Extend; ``sinks`` > 0: StreamingLLM; else ReRoPE."""

    suffix: str
    label: str
    grouped: bool
    identity_within: bool
    in_length_study: bool = False  # scored in the LM (perplexity, passkey), as their papers judge them; not the length study
    sinks: int = 0  # StreamingLLM's attention sinks (its default cache keeps 4)
    window_share: int = 2  # w = L / window_share (ReRoPE's reference: 512 of 4,096, so 8)
    log_n: bool = False  # ReRoPE's reference scales each query by max(1, ln(i + 1) / ln L)

    def module(self, trained: RotaryPositionalEncoding, length: int, trained_length: int,
               longest: int) -> RemappedRotary:
        """The remapping for rows of ``length`` tokens of a model trained on rows of ``trained_length``."""
        if self.sinks:  # a cache of L entries: s sinks and the L − s most recent
            return RemappedRotary(trained, max(1, trained_length - self.sinks), None, self.sinks)
        window = max(1, trained_length // self.window_share)
        return RemappedRotary(trained, window, group_size(length, trained_length, window) if self.grouped else None,
                              log_n=trained_length if self.log_n else 0)


def group_size(length: int, trained_length: int, window: int) -> int:
    """Self-Extend's smallest G whose largest remapped distance in a row of ``length`` tokens,
    ⌊(length − 1)/G⌋ + w − ⌊w/G⌋, stays below ``trained_length``."""
    group = max(1, math.ceil((length - window) / max(1, trained_length - window)))
    while (length - 1) // group + window - window // group > trained_length - 1:
        group += 1
    return group


REMAPPINGS = (Remapping("_rerope", "ReRoPE", grouped=False, identity_within=False, window_share=8, log_n=True),
              Remapping("_selfextend", "SelfExtend", grouped=True, identity_within=True),
              Remapping("_streaming", "StreamingLLM", grouped=False, identity_within=True, sinks=4))
