"""``stick_breaking``: stick-breaking attention (Tan et al., ICLR 2025, "Scaling Stick-Breaking Attention: An
Efficient Implementation and In-depth Study", https://arxiv.org/abs/2410.17980, §2): no positional encoding, and
no softmax. Query i breaks a stick from its nearest key backwards: key j takes the share β_ij = σ(z_ij) of what the
nearer keys left,

    A_ij = β_ij · Π_{j<l<i} (1 − β_il),   z_ij = q_i·k_j / √Dh   (j < i),

so the weights sum to at most 1, a near key shadows the ones behind it, and the order of the keys is in the weights
themselves. The rest of the stick, 1 − Σ_j A_ij, goes to the query's own value. As the reference
(github.com/shawntan/stickbreaking-attention, ``sb_ref.py`` ``stickbreaking`` in log space, the diagonal left out by
default (``attend_current=False``); the remainder added as rem·v_i, as dolomite-engine's ``SBAttention`` with
``sb_remainder=True``).

The scheme's slot is ``attention_weights``: it turns the masked logits into weights in place of the softmax. In a
bidirectional encoder, as pelab's ``alibi``, the even heads break their stick to the left and the odd heads to the
right (l between j and i either way).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.functional import right_looking_heads


def stick_breaking_weights(scores: torch.Tensor, keys_left: torch.Tensor,
                           looks_right: torch.Tensor | None = None) -> torch.Tensor:
    """scores (B, H, Tq, Tk): the logits z with −inf where a key is masked; keys_left (H|1, Tq, Tk) bool: the keys
    each head breaks its stick over (strictly left of the query, or right); looks_right (H, 1, 1) bool: the heads
    whose stick runs right (an encoder's odd heads), None where every head looks left (causal). The queries are the
    last Tq of the Tk keys. Returns the weights (B, H, Tq, Tk): A_ij over those keys, 1 − Σ_j A_ij on the query's own
    key."""
    z = scores.to(torch.promote_types(scores.dtype, torch.float32)).masked_fill(~keys_left, float("-inf"))
    log_rest = -F.softplus(z)  # log(1 − β) = log σ(−z), 0 off the stick: finite everywhere
    log_beta = z + log_rest  # log β = log σ(z) = z + log σ(−z), −inf off the stick
    # Σ_{l between j and i, l ≠ j} log(1 − β_il): for keys left of i, l > j; right of i, l < j. log_rest is 0 off
    # the stick, so the sum over every l > j (l < j) is the sum between j and i. Cumulative sums, exact in float32
    # under autocast and on CUDA (the reference's einsum with a triangular matrix would run in TF32 or half there).
    behind = log_rest.flip(-1).cumsum(-1).flip(-1) - log_rest  # Σ_{l > j}
    if looks_right is not None:  # Σ_{l < j} for the heads that look right
        behind = torch.where(looks_right, log_rest.cumsum(-1) - log_rest, behind)
    total = scores.shape[-1]
    position = torch.arange(total, device=scores.device)
    weights = (log_beta + behind).exp()  # (B, H, Tq, Tk), 0 off the stick
    i = torch.arange(total - scores.shape[-2], total, device=scores.device)[:, None]
    remainder = (1 - weights.sum(-1, keepdim=True)).clamp(min=0.0)  # ≥ 0 but for rounding
    return (weights + remainder * (position[None, :] == i)).to(scores.dtype)


class StickBreakingAttention(PositionalEncoding):
    source = "Tan et al., ICLR 2025, arXiv 2410.17980; reference code shawntan/stickbreaking-attention (sb_ref)"

    def attention_weights(self, scores: torch.Tensor) -> torch.Tensor:
        n, total = scores.shape[-2], scores.shape[-1]
        i = torch.arange(total - n, total, device=scores.device)[:, None]
        j = torch.arange(total, device=scores.device)[None, :]
        if self.causal:
            return stick_breaking_weights(scores, (j < i)[None])  # keys (1, Tq, Tk)
        looks_right = right_looking_heads(self.n_heads, scores.device)
        return stick_breaking_weights(scores, torch.where(looks_right, j > i, j < i), looks_right)  # keys (H, Tq, Tk)

    def describe(self, usage: Usage) -> str:
        encoder = ("" if self.causal else "; in an encoder the even heads break their stick to the left and the odd "
                   "heads to the right (the paper is causal; pelab's `alibi` convention)")
        return ("the stick excludes the query's own key and its rest goes to the query's value, as the reference's "
                f"defaults{encoder}.")
