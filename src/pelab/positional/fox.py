"""``fox``: the Forgetting Transformer (Lin et al., ICLR 2025, "Forgetting Transformer: Softmax Attention with a
Forget Gate", https://arxiv.org/abs/2503.02130, §2): no positional encoding, a data-dependent decay instead.

Each layer has a scalar forget gate per head and token, f_t = σ(w_h·x_t + b_h) with x_t the layer's normed input, and
adds to query i's logit on key j the log of the gates between them:

    D_ij = Σ_{l=j+1}^{i} log f_l = Λ_i − Λ_j,   Λ_t = Σ_{l≤t} log f_l   (j ≤ i; D_ii = 0),

unscaled (after the 1/√d of q·k), as the reference (github.com/zhixuan-lin/forgetting-transformer,
``ops/forgetting_attention.py``: ``log_lambda = cumsum(logsigmoid(fgate_logit))``; ``modeling_forgetting_transformer
.py``: ``fgate_proj = Linear(hidden, heads, bias=True)`` with the bias initialised to 0, so f ≈ 0.5 at the start).
With every gate open (f = 1) the bias is 0 and FoX is NoPE. This is the basic FoX of the paper's LLaMA-style
comparisons (its gate only); "FoX (Pro)"'s QK-norm, output gate and token shift are not part of it.

The gate is causal (key j decays by the gates of the tokens after it). In a bidirectional encoder, as pelab's
``alibi``, the even heads look left (this decay, keys to the right masked) and the odd heads right, decayed by the
gates from the query up to the key: Σ_{l=i}^{j−1} log f_l.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.functional import relative_distances, right_looking_heads


class ForgetGate(PositionalEncoding):
    """One layer's forget gates: its ``content_bias`` is D (module docstring); every other slot is a no-op."""

    def __init__(self, *, d_model: int, n_heads: int, causal: bool) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal)
        self.gate = nn.Linear(d_model, n_heads)
        nn.init.zeros_(self.gate.bias)  # the reference's init: f = σ(w·x) ≈ 0.5 at the start

    def log_forget(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, D) -> log f (B, H, T), in float32 at least, as the reference."""
        return F.logsigmoid(self.gate(x).to(torch.promote_types(x.dtype, torch.float32))).transpose(1, 2)

    def content_bias(self, x, q, k, cache=None):
        log_f = self.log_forget(x)  # (B, H, Tx): x's tokens (every token without a cache, the new ones with one)
        n, total = q.shape[2], k.shape[2]
        if cache is None:
            log_all = log_f  # (B, H, T)
        else:  # incremental: the gates of earlier tokens are kept with the keys
            log_all = log_f if "log_forget" not in cache else torch.cat([cache["log_forget"], log_f], dim=-1)
            cache["log_forget"] = log_all
        cumulative = log_all.cumsum(-1)  # Λ (B, H, Tk)
        left = cumulative[..., total - n:, None] - cumulative[..., None, :]  # Λ_i − Λ_j (B, H, n, Tk)
        if self.causal:
            return left.to(q.dtype)  # keys right of the query are masked by the causal mask
        # bidirectional (no cache, every query): odd heads look right, Σ_{l=i}^{j−1} log f_l = Λ_{j−1} − Λ_{i−1}
        if n != total:
            raise ValueError(f"a bidirectional FoX reads every query of its row: got {n} of {total}")
        before = cumulative - log_all  # Λ_{t−1} (B, H, T)
        right = before[..., None, :] - before[..., :, None]  # (B, H, T, T)
        rel = relative_distances(torch.arange(n, device=x.device), torch.arange(total, device=x.device))  # j − i
        looks_right = right_looking_heads(self.n_heads, x.device)  # (H, 1, 1)
        bias = torch.where(looks_right, right, left)
        hidden = torch.where(looks_right, rel < 0, rel > 0)  # (H, T, T): the side the head does not watch
        return bias.masked_fill(hidden, float("-inf")).to(q.dtype)


class FoXPositionalEncoding(PositionalEncoding):
    """A forget gate per layer (``layer(i)``), as the reference builds one per attention layer."""

    source = "Lin et al., ICLR 2025, arXiv 2503.02130; reference code zhixuan-lin/forgetting-transformer"

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.gates = nn.ModuleList(ForgetGate(d_model=d_model, n_heads=n_heads, causal=causal)
                                   for _ in range(n_layers))

    def layer(self, index: int) -> PositionalEncoding:
        return self.gates[index]

    def describe(self, usage: Usage) -> str:
        encoder = ("" if self.causal else "; in an encoder the even heads look left and the odd heads right, each "
                   "decayed by the gates between query and key (the paper is causal; pelab's `alibi` convention)")
        return ("its forget gate is the paper's basic FoX (no QK-norm, output gate or token shift of FoX Pro), one per "
                f"layer, its bias initialised to 0 as the reference (each gate ≈ 0.5 at the start){encoder}.")
