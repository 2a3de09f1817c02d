"""``mamba``: no attention at all, the attention-free reference of the LM study. Every layer's self-attention is
replaced by a selective state-space layer (Mamba: Gu & Dao 2023, https://arxiv.org/abs/2312.00752;
``model/ssm.py``), the rest of the layer (pre-LN, the feed-forward block, the embedding and head) as every scheme's,
at the same initial weights: only the token mixer differs, as only the scheme differs elsewhere. Order is the
recurrence itself: no position is read anywhere.

Matched parameters: at E = 1 and N = 16 a layer's SSM holds 3·D² + D·(⌈D/16⌉ + 2N) + ⌈D/16⌉·D + D·(N + d_conv + 3)
parameters against attention's 4·D² + 4·D: 16,320 against 16,640 at the quick LM's D = 64, 218,880 against 263,168 at
the full LM's 256 (``tests/test_ssm.py``). The attention a layer would have had is drawn and dropped, so the shared
weights after it are every scheme's. Causal only (a recurrence from the left): the LM, and the length study's
decoder-only tasks where a profile lists it.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from pelab.model.ssm import SelectiveSSM
from pelab.positional.base import PositionalEncoding, Usage


@dataclass(frozen=True)
class SelectiveSSMOptions:
    d_state: int = 16  # N, the state per channel (Mamba's default)
    expand: int = 1  # E: inner channels E·D (Mamba's 2 pairs two such blocks with one attention + FFN layer)
    d_conv: int = 4  # the causal depthwise filter's width

    def check(self, where: str) -> None:
        for key in ("d_state", "expand", "d_conv"):
            value = getattr(self, key)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{where}.{key} must be an integer >= 1, got {value!r}")


class SSMLayer(PositionalEncoding):
    """One layer's scheme: every attention slot a no-op, and its SSM as the layer's ``mixer``."""

    def __init__(self, *, d_model: int, n_heads: int, options: SelectiveSSMOptions) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=True)
        self.ssm = SelectiveSSM(d_model, d_state=options.d_state, expand=options.expand, d_conv=options.d_conv)

    def mixer(self) -> nn.Module:
        return self.ssm


class SelectiveSSMScheme(PositionalEncoding):
    """An SSM per layer (``layer(i)``), built for the stack's depth."""

    Options = SelectiveSSMOptions
    depth_specific = True
    layer_slot = "mixer"  # what each layer's scheme does (``pelab schemes``): the token mixer itself
    source = ("Gu & Dao 2023, arXiv 2312.00752; checked against PyPI mambapy's MambaBlock (a port of the official "
              "state-spaces/mamba mamba_simple.py)")

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, d_state: int = 16,
                 expand: int = 1, d_conv: int = 4) -> None:
        if not causal:
            raise ValueError("scheme 'mamba' is causal only (a recurrence from the left): use it with causal tasks, "
                             "the LM or the length study's <problem>_causal")
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.options = SelectiveSSMOptions(d_state, expand, d_conv)
        self.layers = nn.ModuleList(SSMLayer(d_model=d_model, n_heads=n_heads, options=self.options)
                                    for _ in range(n_layers))

    def layer(self, index: int) -> PositionalEncoding:
        return self.layers[index]

    def describe(self, usage: Usage) -> str:
        o = self.options
        return (f"no attention: every layer's token mixer is a selective SSM (Mamba-1, E = {o.expand}, N = {o.d_state}, "
                f"a causal filter of {o.d_conv}) in place of self-attention, at about attention's parameters; the "
                "feed-forward blocks, embedding and head are every scheme's.")
