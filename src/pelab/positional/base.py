"""The positional-encoding interface: four slots, each a no-op by default.

Every scheme plugs into one (or more) of four places (the first three are lucidrains/x-transformers' taxonomy):

1. ``embed``  — add a vector to the token embeddings (sinusoidal, learned);
2. ``rotate`` — rotate (or otherwise transform) queries and keys inside attention (RoPE, PoPE);
3. ``bias``   — add a bias of positions alone to the attention logits (ALiBi, T5 relative buckets, KERPLE);
4. ``content_bias`` — add a bias that also reads the tokens: the layer's input, queries and keys (FoX's forget
   gates, CoPE's counts, where position is what the data makes of it);

and two more: ``attention_weights`` turns the masked logits into weights in place of the softmax (stick-breaking
attention), and ``logits`` computes the content logits in place of q·kᵀ/√Dh (RoPE with its relative positions
remapped at evaluation: ReRoPE, Self-Extend). The model calls all of them every time. ``mixer`` replaces the attention
itself (a selective SSM, the attention-free reference).
"No positional encoding" is this base class unchanged: a null object, never an ``if`` in model code.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch
from torch import nn


@dataclass(frozen=True)
class NoOptions:
    """A scheme without hyperparameters. Schemes that have some declare their own frozen dataclass as
    ``Options``; its fields are the scheme's section of ``positional`` in params (``positional.<name>``)."""


def validated_options(options: type, raw: dict[str, Any] | Any | None, where: str) -> Any:
    """``options`` (a scheme's ``Options`` dataclass) from a params mapping (None: the defaults), with a one-line
    error naming ``where`` for a key it does not declare; an ``Options`` with a ``check(where)`` method checks its
    values there (errors that name the params key)."""
    if isinstance(raw, options):
        return raw
    raw = dict(raw or {})
    valid = sorted(f.name for f in fields(options))
    unknown = sorted(set(raw) - set(valid))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} in {where}; valid options: {', '.join(valid) or '(none)'}")
    value = options(**raw)
    if hasattr(value, "check"):
        value.check(where)
    return value


@dataclass(frozen=True)
class Usage:
    """Where a scheme serves, for the sentence that states its setup (``PositionalEncoding.describe``): the
    study, the most positions of a training row and of an evaluation row, and the relative offsets training spans
    (``long_offsets``: those only a longer evaluation spans, if any)."""

    study: str
    longest_train: int
    longest_eval: int
    offsets: range
    long_offsets: range | None = None


class PositionalEncoding(nn.Module):
    """Base class of every scheme; each hook leaves its input untouched.

    ``causal`` tells relative schemes whether keys can lie to the right of the query
    (bidirectional encoder) or only at or left of it (decoder self-attention). ``n_layers`` is the depth of
    the stack the scheme serves; a scheme that keeps one bias per layer (``fire``) builds that many.
    """

    Options: type = NoOptions  # the scheme's hyperparameters, validated by ``registry.scheme_options``
    # Training launches only device work (no host-side draws), so a CUDA graph replays it faithfully
    # (``training.graphs``).
    graph_safe: bool = True
    # the family of evaluation-time variants its runs are also scored with beyond the trained length, without
    # retraining (``positional.variants.MENUS``: "rope_extensions", RoPE's under HF's names), beside the temperature
    # and crop every scheme gets; "" for none
    variants: str = ""
    # True: built for one depth (a layout: its layers differ), so a stack of another depth refuses it
    depth_specific: bool = False
    # what each layer's scheme does where the scheme is built per layer (FoX's gates, FoPE's series: ``pelab schemes``)
    layer_slot: str = "content_bias"
    # what the registry builds it as (``registry.build_positional_encoding`` sets them): its registered name, the
    # switches against attention dilution its models' self-attention layers carry (``positional.switched``,
    # ``model.switches``: "ssmax", "sink", "gate"; none by default) and its spec's line
    name: str = ""
    switches: tuple[str, ...] = ()
    about: str = ""

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1) -> None:
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.causal = causal
        self.n_layers = n_layers

    # Slot 1: embeddings ----------------------------------------------------------------------
    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """x: (B, T, D) token embeddings; positions: (T,) integer positions. Returns (B, T, D)."""
        return x

    # Slot 2: rotation of queries and keys ----------------------------------------------------
    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """q: (B, H, Tq, Dh), k: (B, H, Tk, Dh); q_pos: (Tq,), k_pos: (Tk,)."""
        return q, k

    # Slot 3: bias on the attention logits ----------------------------------------------------
    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor | None:
        """Additive logit bias of shape (H, Tq, Tk), or None for no bias."""
        return None

    # Slot 4: a bias on the attention logits that reads the content ----------------------------
    def content_bias(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     cache: dict[str, torch.Tensor] | None = None) -> torch.Tensor | None:
        """Additive logit bias (B, H, Tq, Tk) from x, the layer's normed input, and the rotated q (B, H, Tq, Dh),
        k (B, H, Tk, Dh); None for none. Self-attention only; the queries are always the last Tq of the Tk tokens.
        ``cache`` is the layer's incremental-decoding cache (``MultiHeadAttention.extend``; x (B, Tq, D) the new
        tokens), where a scheme keeps what it needs of earlier tokens; None: x (B, Tk, D) holds every token, on a
        whole row (Tq = Tk) or, in a causal stack, for its last query alone (``MultiHeadAttention.last_query``,
        Tq = 1). A causal scheme's bias is finite (the causal mask hides the keys it does not read); a
        bidirectional one's may be −inf."""
        return None

    # The content logits themselves ------------------------------------------------------------
    def logits(self, q: torch.Tensor, k: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor | None:
        """The content logits (B, H, Tq, Tk) of q (B, H, Tq, Dh) and k (B, H, Tk, Dh) as ``rotate`` returned them, at
        positions q_pos (Tq,) and k_pos (Tk,), in place of q·kᵀ/√Dh; None (this default): q·kᵀ/√Dh, on the fused
        kernel. Overridden where the logits are not one product of rotated queries and keys: RoPE read with its
        relative positions remapped beyond a window (``positional.remapping``: ReRoPE, Self-Extend)."""
        return None

    # The normalisation: logits -> weights -------------------------------------------------------
    def attention_weights(self, scores: torch.Tensor) -> torch.Tensor:
        """scores (B, H, Tq, Tk): the scaled logits with every bias and mask (−inf) in; the queries are the last Tq of
        the Tk keys (self-attention). Returns the attention weights (B, H, Tq, Tk). This default, the softmax, is
        never called: a scheme that keeps it attends on the fused kernel (``model.attention.own_weights``)."""
        return scores.softmax(dim=-1)

    # The token mixer in place of attention ------------------------------------------------------
    def mixer(self) -> nn.Module | None:
        """A module (B, T, D) -> (B, T, D) that a layer runs in place of self-attention, with ``run(x)`` -> (y,
        state) and ``step(x, state)`` for incremental decoding (the attention-free reference, ``positional.ssm``);
        None (this default): the layer attends, and every slot above applies."""
        return None

    @property
    def attends(self) -> bool:
        """Whether every layer attends (no ``mixer``); evaluation reads a model that does not without the attention
        temperature, and the encoder-decoder refuses it."""
        return all(self.layer(i).mixer() is None for i in range(self.n_layers))

    def layer_biases(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> list[torch.Tensor | None]:
        """The bias of every layer: one, shared by all layers (this default), or one per layer (``n_layers``)."""
        return [self.bias(q_pos, k_pos)]

    def layer(self, index: int) -> PositionalEncoding:
        """The scheme whose ``rotate`` layer ``index`` applies: this one in every layer (this default), or a layout's
        layer type (``positional.layout``)."""
        return self

    def describe(self, usage: Usage) -> str | None:
        """One sentence stating the choices in this scheme's setup that could favour or handicap it where it is
        used (the report prints it after the scheme's name), or None when it has none to state."""
        return None

    def rotation_frequencies(self) -> torch.Tensor | None:
        """(Dh/2,) the angle per position step of each rotated pair (x_2f, x_2f+1) of queries and keys, or None
        for a scheme that rotates nothing (what ``pelab.probe`` reads for the frequency-use diagnostic)."""
        return None

    def check_length(self, length: int) -> None:
        """Raise ValueError if this scheme cannot encode positions 0..length-1."""


    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, causal={self.causal}"
