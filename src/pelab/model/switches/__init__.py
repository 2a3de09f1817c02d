"""Switches: changes to self-attention that compose with every positional scheme, against attention dilution (SSMax,
sinks, an output gate) or for stable logits (QK-norm).

**Found by convention** (the one place this is said): a switch is one module of this package, named like the switch
(``ssmax.py``), holding its record (``REFERENCE``, ``SAYS``: read without torch by ``positional.switched``) and
``SWITCH``, its ``base.Switch`` subclass. Nothing imports a switch's module by name but ``switch_class``, and
nothing lists the switches: a scheme names its own (``schemes.yaml``: ``rope_ssmax: {of: rope, switches: [ssmax]}``;
or ``<scheme>+<switch>`` anywhere a scheme is named), so the import closure of a stage or a kept run follows only
its scheme's switches (``pelab.closure``): adding a switch retrains and re-runs nothing kept.

The model builders install a scheme's switches into every self-attention layer (``install``), their parameters
drawn from a stream of their own, so that a switched model shares every other initial weight with its scheme's.
Cross-attention (the translation decoder's) has none. Each acts where its reference puts it (its module says).
"""

from __future__ import annotations

import importlib
from functools import cache

import torch
from torch import nn

from pelab.model.switches.base import Switch
from pelab.positional.switched import check_switches


@cache
def switch_class(name: str) -> type[Switch]:
    """The ``SWITCH`` of ``pelab.model.switches.<name>``."""
    return importlib.import_module(f"{__name__}.{name}").SWITCH


class Switches(nn.Module):
    """One self-attention layer's switches (``names``, each a module of this package), a submodule each; with none
    it holds no parameter and each hook returns its input (the null object every attention module starts with)."""

    def __init__(self, d_model: int, n_heads: int, names: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.names = check_switches(names, "Switches")
        for name in self.names:  # in the switches' order, so a pair draws its parameters as each alone would
            self.add_module(name, switch_class(name)(d_model, n_heads))
        self.counts_keys = any(s.counts_keys for s in self.children())

    def normed(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        for switch in self.children():
            q, k = switch.normed(q, k)
        return q, k

    def query_scale(self, seen: torch.Tensor | None, k_len: int) -> torch.Tensor | None:
        """The product of the switches' factors on each query (``Switch.query_scale``), or None."""
        scale = None
        for switch in self.children():
            factor = switch.query_scale(seen, k_len)
            if factor is not None:
                scale = factor if scale is None else scale * factor
        return scale

    def with_sink(self, k: torch.Tensor, v: torch.Tensor, attn_bias: torch.Tensor | None, q_len: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        for switch in self.children():
            k, v, attn_bias = switch.with_sink(k, v, attn_bias, q_len)
        return k, v, attn_bias

    def key_weights(self, weights: torch.Tensor) -> torch.Tensor:
        for switch in reversed(list(self.children())):
            weights = switch.key_weights(weights)
        return weights

    def gated(self, out: torch.Tensor, x: torch.Tensor | None) -> torch.Tensor:
        if x is None:
            return out
        for switch in self.children():
            out = switch.gated(out, x)
        return out

    def extra_repr(self) -> str:
        return "" if self.names else "none"


def install(model: nn.Module, names: tuple[str, ...], seed: int) -> None:
    """Give every self-attention module of ``model`` (``self_attention``-flagged ``MultiHeadAttention``) the switches
    ``names``, their parameters drawn from a stream of their own (``seed``), so every other weight is the unswitched
    model's."""
    if not names:
        return
    from pelab.seeding import seeded

    attentions = [module for module in model.modules() if getattr(module, "self_attention", False)]
    if not attentions:
        raise ValueError(f"switches {'+'.join(names)} act on attention, and this model has none (an attention-free "
                         "scheme: mamba)")
    with seeded(seed + 2_000_003):
        for module in attentions:
            module.switches = Switches(module.n_heads * module.head_dim, module.n_heads, names)
