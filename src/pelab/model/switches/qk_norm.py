"""QK-norm (Dehghani et al. 2023, https://arxiv.org/abs/2302.05442, §3.1; per head, as Qwen3 and Gemma 3 put it):
each head's query and key RMS-normalised over the head's channels, with a learned gain per channel (from 1), before
the scheme's rotation: q ← g_q ⊙ q / rms(q), k ← g_k ⊙ k / rms(k), rms(x) = sqrt(mean(x²) + ε), ε = 10⁻⁶, one gain
per layer shared by its heads (HF ``Qwen3Attention``: ``q_norm = Qwen3RMSNorm(head_dim)``, applied to the projected
heads before ``apply_rotary_pos_emb``). Each head's query then has norm at most max|g_q|·√Dh, so a logit is at most
max|g_q|·max|g_k|·√Dh: training stays stable (Dehghani et al.'s motive), and without positions at a higher loss
(arXiv 2603.11611, as issue 73 cites it: the claims table reads it, ``qk-norm-nope-lm``). At long context it is said
to flatten attention (Yang et al. 2025, Rope to Nope and Back Again, https://arxiv.org/abs/2501.18795): the probe's
``attn_entropy_beyond`` shows it per run."""

from __future__ import annotations

import torch
from torch import nn

from pelab.model.switches.base import Switch

REFERENCE = "Dehghani et al. 2023, Scaling Vision Transformers to 22 Billion Parameters, https://arxiv.org/abs/2302.05442"
SAYS = "QK-norm: each head's queries and keys RMS-normalised with a learned gain, before the positions"
EPS = 1e-6  # Qwen3's rms_norm_eps


class QKNorm(Switch):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads)
        head_dim = d_model // n_heads
        self.q_gain = nn.Parameter(torch.ones(head_dim))  # (Dh,)
        self.k_gain = nn.Parameter(torch.ones(head_dim))

    @staticmethod
    def _rms_normed(x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        """x (…, Dh) / sqrt(mean(x²) + ε) · gain, in float32 as HF's RMSNorm computes it, back in x's dtype."""
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * gain

    def normed(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q (B, H, Tq, Dh), k (B, H, Tk, Dh), each normalised over Dh."""
        return self._rms_normed(q, self.q_gain), self._rms_normed(k, self.k_gain)


SWITCH = QKNorm
