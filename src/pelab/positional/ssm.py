"""``mamba``: no attention at all, the attention-free reference of the LM study. Every layer's self-attention is
replaced by a selective state-space layer (Mamba: Gu & Dao 2023, https://arxiv.org/abs/2312.00752;
``SelectiveSSM`` below), the rest of the layer (pre-LN, the feed-forward block, the embedding and head) as every
scheme's, at the same initial weights: only the token mixer differs, as only the scheme differs elsewhere. Order is the
recurrence itself: no position is read anywhere.

Matched parameters: at E = 1 and N = 16 a layer's SSM holds 3·D² + D·(⌈D/16⌉ + 2N) + ⌈D/16⌉·D + D·(N + d_conv + 3)
parameters against attention's 4·D² + 4·D: 16,320 against 16,640 at the quick LM's D = 64, 218,880 against 263,168 at
the full LM's 256 (``tests/test_ssm.py``). The attention a layer would have had is drawn and dropped, so the shared
weights after it are every scheme's. Causal only (a recurrence from the left), in the sequence model: the LM, and
a causal length task given it (``length_task_schemes``), where recall's masked-distractor axis is not scored (nothing
can be hidden from a recurrence); the encoder-decoder refuses it. Evaluation reads it without the attention
temperature (``attends``, False where a layer has a ``mixer``); its crop to L is every scheme's.

The layer, ``SelectiveSSM`` (Mamba: Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with Selective State
Spaces", https://arxiv.org/abs/2312.00752, §3 and Algorithm 2), in plain PyTorch; it lives with its scheme, so that
what reads the schemes (the report) reads no model code.

Per channel c of the E·D inner ones and state n < N, with the input x_t (B, T, D):

    u, z = split(W_in x_t)                                   (E·D each)
    u_t = SiLU(causal depthwise conv of u over the last ``d_conv`` steps)
    Δ_t = softplus(W_Δ (W_r u_t) + b_Δ),  B_t = W_B u_t,  C_t = W_C u_t       (Δ (E·D,), B and C (N,): selective)
    h_t[c, n] = exp(Δ_t[c]·A[c, n])·h_{t−1}[c, n] + Δ_t[c]·B_t[n]·u_t[c]       (zero-order hold of A, Euler of B)
    y_t[c] = Σ_n h_t[c, n]·C_t[n] + D[c]·u_t[c],   out_t = W_out (y_t ⊙ SiLU(z_t))

with A = −exp(A_log) kept negative (S4D-real init A[c, n] = −(n + 1)), Δ's bias the inverse softplus of a draw
log-uniform in [dt_min, dt_max] (§3.6, Appendix E.1), W_r of rank ⌈D/16⌉. The scan runs step by step (the paper's
recurrent mode, what its ``selective_scan_ref`` computes), so it is exact in any precision and batches under vmap;
``step`` is the same recurrence one token at a time, for incremental decoding. No position enters anywhere: order is
the recurrence itself. ``tests/test_ssm.py`` checks ``SelectiveSSM`` against PyPI ``mambapy``'s ``MambaBlock`` (an
independent port of the official ``mamba_simple.py``) with the weights copied, whole rows and step by step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage


class SelectiveSSM(nn.Module):
    """(B, T, D) -> (B, T, D), causal (module docstring); ``expand`` E, ``d_state`` N, ``d_conv`` the filter."""

    def __init__(self, d_model: int, *, d_state: int = 16, expand: int = 1, d_conv: int = 4, dt_min: float = 0.001,
                 dt_max: float = 0.1, dt_floor: float = 1e-4) -> None:
        super().__init__()
        inner = expand * d_model
        self.d_state, self.d_conv, self.inner = d_state, d_conv, inner
        self.dt_rank = math.ceil(d_model / 16)
        self.in_proj = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv1d = nn.Conv1d(inner, inner, d_conv, groups=inner, padding=d_conv - 1)  # depthwise, causal after trim
        self.x_proj = nn.Linear(inner, self.dt_rank + 2 * d_state, bias=False)  # -> (Δ's rank, B, C)
        self.dt_proj = nn.Linear(self.dt_rank, inner)
        std = self.dt_rank ** -0.5
        dt = torch.exp(torch.rand(inner) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)).clamp(min=dt_floor)
        with torch.no_grad():
            nn.init.uniform_(self.dt_proj.weight, -std, std)
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus⁻¹(dt)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1, dtype=torch.float32).repeat(inner, 1)))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d_model, bias=False)

    def selective(self, u: torch.Tensor):
        """u (B, T, E·D) -> Δ (B, T, E·D), B and C (B, T, N): the input-dependent parameters."""
        dt, b, c = self.x_proj(u).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        return F.softplus(self.dt_proj(dt)), b, c

    def scan(self, u: torch.Tensor, h: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """u (B, T, E·D) after the conv -> y (B, T, E·D) and the last state h (B, E·D, N); h the state before."""
        delta, b, c = self.selective(u)
        a = -torch.exp(self.A_log)  # (E·D, N)
        decay = torch.exp(delta.unsqueeze(-1) * a)  # (B, T, E·D, N)
        drive = delta.unsqueeze(-1) * b.unsqueeze(2) * u.unsqueeze(-1)  # (B, T, E·D, N)
        if h is None:
            h = u.new_zeros(u.shape[0], self.inner, self.d_state)
        ys = []
        for t in range(u.shape[1]):
            h = decay[:, t] * h + drive[:, t]
            ys.append((h @ c[:, t].unsqueeze(-1)).squeeze(-1))  # (B, E·D)
        return torch.stack(ys, dim=1) + self.D * u, h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.run(x)
        return y

    def run(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """x (B, T, D) a whole row -> (B, T, D) and the state after it ({"ssm": (B, E·D, N), "conv": (B, E·D,
        d_conv − 1) the last inputs of the conv}) for ``step``."""
        t = x.shape[1]
        u, z = self.in_proj(x).chunk(2, dim=-1)  # (B, T, E·D) each
        u_t = u.transpose(1, 2)  # (B, E·D, T)
        keep = self.d_conv - 1  # the inputs the filter still reads after the row (none for a width of 1)
        conv = F.pad(u_t, (keep, 0))[..., u_t.shape[-1]:]  # (B, E·D, keep), zeros before a short row
        u = F.silu(self.conv1d(u_t)[..., :t].transpose(1, 2))
        y, h = self.scan(u)
        return self.out_proj(y * F.silu(z)), {"ssm": h, "conv": conv}

    def step(self, x: torch.Tensor, state: dict[str, torch.Tensor]) -> torch.Tensor:
        """x (B, 1, D) one new token after the row ``state`` holds (from ``run``, updated in place) -> (B, 1, D)."""
        u, z = self.in_proj(x).chunk(2, dim=-1)  # (B, 1, E·D)
        window = torch.cat([state["conv"], u.transpose(1, 2)], dim=-1)  # (B, E·D, d_conv)
        state["conv"] = window[..., 1:]
        u = F.silu((window * self.conv1d.weight[:, 0]).sum(-1) + self.conv1d.bias).unsqueeze(1)  # (B, 1, E·D)
        y, state["ssm"] = self.scan(u, state["ssm"])
        return self.out_proj(y * F.silu(z))


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
        # named for the optimiser: a token mixer's weights decay as attention's (``training.loop.decays``)
        self.token_mixer = SelectiveSSM(d_model, d_state=options.d_state, expand=options.expand,
                                        d_conv=options.d_conv)

    def mixer(self) -> nn.Module:
        return self.token_mixer


class SelectiveSSMScheme(PositionalEncoding):
    """An SSM per layer (``layer(i)``), as FoX builds a gate per layer."""

    Options = SelectiveSSMOptions
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
        return (f"no attention: every layer's token mixer is a selective SSM (Mamba-1, E = {o.expand}, "
                f"N = {o.d_state}, a causal filter of {o.d_conv}) in place of self-attention, at about attention's parameters; the "
                "feed-forward blocks, embedding and head are every scheme's.")
