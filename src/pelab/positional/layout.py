"""Layouts: a positional scheme and an attention span chosen per layer, as the open models of 2025–26 ship them.

A layout has two layer types: ``layer``, and ``nth_layer`` on every ``period``-th layer (layer i, counted from 0, is
the nth where (i + 1) % period == 0: HF's ``no_rope_layer_interval`` and ``sliding_window_pattern`` count so). A
stack shallower than the period keeps its last layer the nth (pelab's rule, so every layout has its odd layer at
the profiles' depths: a 1:3 pattern is 1:1 at 2 layers, 1:3 at 4; HF's configs would give such a stack none); a
preset with ``last_global`` makes the last layer the nth at every depth, as HF's Gemma 4 config does, and one with
``nth_first`` puts the nth first in each period, i % period == 0 (SWAN's "global_start": a global layer, then three
local ones; Puvvada et al. 2025, https://arxiv.org/abs/2504.08719, §2 and Appendix A).

A layer type is data: ``rope`` (θ, partial rotation and its convention), ``yarn`` (RoPE on YaRN's frequencies, as
gpt-oss trains it: ``positional/yarn.py``) or ``none``, the options of that scheme (``positional.<scheme>``'s keys),
and its span, what each query may attend to:
* ``full``: every key (causal: every earlier key);
* ``sliding``: the ``window`` keys nearest it, itself included: key j for query i when i − window < j ≤ i (causal;
  HF's sliding-window mask ``kv_idx > q_idx − sliding_window``); bidirectional, |i − j| < window, pelab's choice (each
  side reaches as far as a causal window, so 2·window − 1 keys; HF's generic bidirectional mask allows |i − j| ≤
  window and Gemma's halves the window first);
* ``chunked``: keys in its own chunk of ``window`` positions, j // window == i // window (HF's
  ``attention_chunk_size``, Llama 4), and causal where the stack is.
``attn_scale`` > 0 multiplies the layer's queries at position p by 1 + attn_scale·ln(1 + floor((p + 1)/floor_scale))
(Llama 4's NoPE layers, HF ``Llama4TextAttention``, ``attn_temperature_tuning``), in training and evaluation as HF does.
``log_base`` = a > 1 multiplies them at evaluation only (the module in eval mode; training is unscaled) by
log_a(a + p) = ln(a + p)/ln a, which is 1 at p = 0 and never below it (SWAN's dynamic attention scaling of its NoPE
layers, §2.2 and Appendix D; the paper fits a per model and does not publish it: its preset sets a = L, the training
length, so the scale is 1 + ln 2/ln L at L).

The model asks every scheme for its layers' schemes (``PositionalEncoding.layer``) and biases (``layer_biases``): a
layout answers with its ``LayerScheme`` per layer, whose bias carries the span's mask. Nothing in the model knows
about layouts. Each preset is a spec in ``schemes.yaml`` (``command_a: {of: layout.Layout, period: 4, layer: …,
nth_layer: …, about: …}``), its options' defaults the pattern; a preset's ``switches`` (gpt-oss's sinks) switch every
layer. A layer's scheme is ``rope``, ``yarn`` or ``none``, modules this one imports, so a layout's runs depend on all
three.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage, validated_options
from pelab.positional.none import NoPositionalEncoding
from pelab.positional.rope import RotaryPositionalEncoding
from pelab.positional.yarn import YaRNRotary

LAYER_SCHEMES: dict[str, type[PositionalEncoding]] = {"rope": RotaryPositionalEncoding, "yarn": YaRNRotary,
                                                      "none": NoPositionalEncoding}

SPANS = ("full", "sliding", "chunked")
LAYER_KEYS = ("scheme", "span", "window", "attn_scale", "floor_scale", "log_base")  # a layer type's own; rest: options


@dataclass(frozen=True)
class LayerSpec:
    """One layer type of a layout (module docstring): its scheme, the scheme's options, and its span."""

    scheme: str = "rope"
    options: dict[str, Any] = field(default_factory=dict)
    span: str = "full"
    window: int = 0  # tokens of the sliding window or of a chunk; 0 for full
    attn_scale: float = 0.0  # Llama 4's query temperature; 0: off
    floor_scale: float = 8192.0  # its step in tokens (HF's default)
    log_base: float = 0.0  # SWAN's inference-time log_a(a + p) query scale; 0: off

    @classmethod
    def parse(cls, raw: dict[str, Any], where: str) -> LayerSpec:
        """From params' mapping {scheme, span, window, attn_scale, floor_scale, log_base, **the scheme's options}, with
        one-line errors naming ``where``."""
        raw = dict(raw)
        own = {key: raw.pop(key) for key in LAYER_KEYS if key in raw}
        scheme = own.pop("scheme", "rope")
        if scheme not in LAYER_SCHEMES:
            raise ValueError(f"{where}.scheme={scheme!r}; valid choices: {', '.join(LAYER_SCHEMES)}")
        spec = cls(scheme=scheme, options=dict(raw), **own)
        validated_options(LAYER_SCHEMES[scheme].Options, spec.options, where)  # unknown keys fail here, in one line
        if spec.span not in SPANS:
            raise ValueError(f"{where}.span={spec.span!r}; valid choices: {', '.join(SPANS)}")
        if (spec.span == "full") != (spec.window == 0) or spec.window < 0:
            raise ValueError(f"{where}.window={spec.window}: a {spec.span} span needs "
                             + ("window 0" if spec.span == "full" else "a window of >= 1 token"))
        if spec.attn_scale < 0 or not spec.floor_scale > 0:
            raise ValueError(f"{where}: attn_scale must be >= 0 and floor_scale > 0, got {spec.attn_scale}, "
                             f"{spec.floor_scale}")
        if spec.log_base != 0 and not spec.log_base > 1:
            raise ValueError(f"{where}.log_base must be 0 (off) or > 1 (the base a of log_a(a + p)), got "
                             f"{spec.log_base}")
        return spec

    def text(self) -> str:
        options = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.options.items())
        span = "full" if self.span == "full" else f"{self.span} {self.window}"
        temperature = f", query temperature {self.attn_scale:g}·ln(1+⌊(p+1)/{self.floor_scale:g}⌋)" \
            if self.attn_scale else ""
        if self.log_base:
            temperature += f", queries ×log_{self.log_base:g}({self.log_base:g}+p) in evaluation"
        return f"{self.scheme}{f' ({options})' if options else ''}, {span}{temperature}"


def nth_layers(period: int, n_layers: int, last_global: bool = False, nth_first: bool = False) -> list[bool]:
    """Which layers are the nth (module docstring): (i + 1) % period == 0 (``nth_first``: i % period == 0), and the
    last if none is (or always, ``last_global``)."""
    nth = [(i + (0 if nth_first else 1)) % period == 0 for i in range(n_layers)]
    if last_global or not any(nth):
        nth[-1] = True
    return nth


def span_mask(span: str, window: int, q_pos: torch.Tensor, k_pos: torch.Tensor, causal: bool) -> torch.Tensor | None:
    """(Tq, Tk) additive mask, −inf where the span forbids key j to query i (module docstring), or None (full)."""
    if span == "full":
        return None
    q, k = q_pos[:, None], k_pos[None, :]
    if span == "sliding":
        allowed = (q - k < window) & ((k <= q) if causal else (k - q < window))
    else:
        allowed = torch.div(q, window, rounding_mode="floor") == torch.div(k, window, rounding_mode="floor")
    return torch.zeros(allowed.shape, device=q_pos.device).masked_fill(~allowed, float("-inf"))


def llama4_query_scale(positions: torch.Tensor, attn_scale: float, floor_scale: float) -> torch.Tensor:
    """(T,) 1 + attn_scale·ln(1 + ⌊(p + 1)/floor_scale⌋) (HF ``Llama4TextAttention.forward``)."""
    return torch.log1p(torch.floor((positions.float() + 1.0) / floor_scale)) * attn_scale + 1.0


def swan_query_scale(positions: torch.Tensor, base: float) -> torch.Tensor:
    """(T,) log_a(a + p) = ln(a + p)/ln a, a = ``base`` (Puvvada et al. 2025, https://arxiv.org/abs/2504.08719,
    §2.2 and Appendix D: "log_a(a + n)", n the token's position)."""
    return (torch.log(positions.double() + base) / math.log(base)).float()


class LayerScheme(PositionalEncoding):
    """One layer type: its scheme's rotation and bias, the span's mask added to the bias, and Llama 4's query
    temperature or SWAN's evaluation-time scale after the rotation."""

    def __init__(self, spec: LayerSpec, *, d_model: int, n_heads: int, causal: bool) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal)
        self.spec = spec
        cls = LAYER_SCHEMES[spec.scheme]
        self.inner = cls(d_model=d_model, n_heads=n_heads, causal=causal,
                         **asdict(validated_options(cls.Options, spec.options, f"a layer's {spec.scheme}")))
        self.graph_safe = self.inner.graph_safe

    def rotate(self, q, k, q_pos, k_pos):
        q, k = self.inner.rotate(q, k, q_pos, k_pos)
        if self.spec.attn_scale:
            scale = llama4_query_scale(q_pos, self.spec.attn_scale, self.spec.floor_scale)  # (Tq,)
            q = q * scale[:, None].to(q.dtype)  # (B, H, Tq, Dh)
        if self.spec.log_base and not self.training:
            q = q * swan_query_scale(q_pos, self.spec.log_base)[:, None].to(q.dtype)  # (B, H, Tq, Dh)
        return q, k

    def bias(self, q_pos, k_pos):
        bias = self.inner.layer_biases(q_pos, k_pos)[0]  # (H, Tq, Tk) or None
        mask = span_mask(self.spec.span, self.spec.window, q_pos, k_pos, self.causal)  # (Tq, Tk) or None
        if mask is None:
            return bias
        return mask[None] if bias is None else bias + mask[None].to(bias.dtype)

    def rotation_frequencies(self):
        return self.inner.rotation_frequencies()

    def check_length(self, length: int) -> None:
        self.inner.check_length(length)


@dataclass(frozen=True)
class LayoutOptions:
    """A layout's period, its two layer types (params' mappings: ``LayerSpec.parse``) and whether its last layer is the
    nth at every depth; a preset's spec sets their defaults (``schemes.yaml``)."""

    period: int = 1
    layer: dict[str, Any] = field(default_factory=dict)
    nth_layer: dict[str, Any] = field(default_factory=dict)
    last_global: bool = False  # HF's Gemma 4
    nth_first: bool = False  # SWAN's global_start: the nth layer first in each period

    def check(self, where: str) -> None:
        Layout.specs(self.period, self.layer, self.nth_layer, where)  # one-line errors at params' parse


class Layout(PositionalEncoding):
    """A stack whose layers take their scheme and span from two layer types (module docstring); a preset is a spec
    whose options default to its pattern, with its source as the spec's ``about``."""

    Options = LayoutOptions
    depth_specific = True

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1, period: int = 1,
                 layer: dict[str, Any] | None = None, nth_layer: dict[str, Any] | None = None,
                 last_global: bool = False, nth_first: bool = False) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        period, specs = self.specs(period, layer, nth_layer)
        self.period = period
        self.types = nn.ModuleList(LayerScheme(spec, d_model=d_model, n_heads=n_heads, causal=causal) for spec in specs)
        self.order = [int(nth) for nth in nth_layers(period, n_layers, last_global, nth_first)]  # 0: layer, 1: nth
        self.graph_safe = all(t.graph_safe for t in self.types)

    @staticmethod
    def specs(period: int, layer: dict[str, Any] | None, nth_layer: dict[str, Any] | None,
              where: str = "positional.<layout>") -> tuple[int, tuple[LayerSpec, LayerSpec]]:
        """The period and both layer types, with one-line errors naming ``where``."""
        if not (isinstance(period, int) and period >= 1):
            raise ValueError(f"{where}.period must be an integer >= 1, got {period!r}")
        parsed = []
        for key, given in (("layer", layer), ("nth_layer", nth_layer)):
            if given is not None and not isinstance(given, dict):
                raise ValueError(f"{where}.{key} must be a mapping (scheme, span, window, options), got {given!r}")
            parsed.append(LayerSpec.parse(given or {}, f"{where}.{key}"))
        return period, (parsed[0], parsed[1])

    def layer(self, index: int) -> PositionalEncoding:
        return self.types[self.order[index]]

    def rotate(self, q, k, q_pos, k_pos):
        raise TypeError("a layout rotates per layer: call layer(i).rotate")

    def bias(self, q_pos, k_pos):
        raise TypeError("a layout's bias is per layer: call layer_biases")

    def layer_biases(self, q_pos, k_pos):
        biases = [t.bias(q_pos, k_pos) for t in self.types]
        return [biases[o] for o in self.order]

    def rotation_frequencies(self):
        return None  # per layer: ``self.layer(i).rotation_frequencies()``

    def check_length(self, length: int) -> None:
        for t in self.types:
            t.check_length(length)

    def layers_text(self) -> str:
        """"layers 1-3: rope, sliding 16; layer 4: none, full" for this stack (the report's setup sentence)."""
        groups: list[tuple[list[int], str]] = []
        for i, o in enumerate(self.order):
            if groups and groups[-1][1] == self.types[o].spec.text():
                groups[-1][0].append(i + 1)
            else:
                groups.append(([i + 1], self.types[o].spec.text()))
        return "; ".join(f"layer {ix[0]}: {text}" if len(ix) == 1 else f"layers {ix[0]}-{ix[-1]}: {text}"
                         for ix, text in groups)

    def describe(self, usage: Usage) -> str | None:
        windows = {self.types[o].spec.window for o in self.order if self.types[o].spec.span != "full"}
        local = (f", local spans of {min(windows)} tokens against rows of {usage.longest_train} in training and "
                 f"{usage.longest_eval} in evaluation") if windows else ""
        return f"Per layer at this depth, {self.layers_text()}{local} (the pattern of {self.about})."

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, order={self.order}"
