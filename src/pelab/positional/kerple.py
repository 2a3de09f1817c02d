"""``kerple``: kernelized relative positional embedding (Chi et al. 2022, "KERPLE: Kernelized Relative Positional
Embedding for Length Extrapolation", https://arxiv.org/abs/2205.09921, §4.2), the learned kernel-bias family beside
ALiBi and T5.

A conditionally positive definite kernel of the distance i − j ≥ 0, one per head h, added to the scaled logits:

    log   (the paper's best, eq. 9):  b_h(i, j) = −r1_h · log(1 + r2_h · (i − j)),
    power (eq. 8):                    b_h(i, j) = −r1_h · (i − j)^r2_h,   r2_h ≤ 2,

r1, r2 > 0 learned. As the reference code (github.com/chijames/KERPLE, ``megatron/mpu/layers.py``,
``ParallelKerpleLog`` / ``ParallelKerplePower``): r1 (log) and the power's exponent start U(0, 2), the other U(0, 1),
both are held at ≥ 0.01 (the exponent also ≤ 2), and one set of 2H scalars serves every layer (``gpt2_model.py``
builds one module and hands it to each layer). The reference resets the parameters' data to the clamped value before
each forward; here the clamp is a straight-through one (the clamped value forward, its gradient passed to the
parameter), which writes nothing inside the step (stacked seeds and CUDA graphs read it). The forward and the
gradient are the reference's; one difference remains: a parameter pushed below the floor stays below it in storage
(the reference's is reset), so after the gradient turns it needs as many steps to come back above the floor.

The paper is causal. In a bidirectional encoder a distance kernel is symmetric and cannot tell left from right, so,
as pelab's ``alibi``, the even heads look left (the causal kernel, keys to the right masked) and the odd heads right.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pelab.positional.base import PositionalEncoding, Usage
from pelab.positional.functional import relative_distances, right_looking_heads

FLOOR = 1e-2  # the reference's eps


def straight_through_clamp(x: torch.Tensor, low: float, high: float | None = None) -> torch.Tensor:
    """x clamped to [low, high] in value, with the identity's gradient (for the reference's in-place ``.data`` clamp)."""
    return x + (x.clamp(min=low, max=high) - x).detach()


def directed_distances(q_pos: torch.Tensor, k_pos: torch.Tensor, n_heads: int, causal: bool) -> torch.Tensor:
    """(Tq,), (Tk,) -> (H, Tq, Tk) float: each head's distance to the key on the side it watches (≥ 0 there), −1
    on the other side. Causal: every head watches the left (i − j); bidirectional: even heads the left, odd the right
    (``alibi``'s convention)."""
    rel = relative_distances(q_pos, k_pos).float()  # (Tq, Tk): j − i
    looks_right = right_looking_heads(n_heads, rel.device) & (not causal)  # (H, 1, 1)
    signed = torch.where(looks_right, rel, -rel)  # (H, Tq, Tk)
    return signed.clamp(min=-1.0)


@dataclass(frozen=True)
class KERPLEOptions:
    kernel: str = "log"  # "log" (−r1·log(1 + r2·d), the paper's best) or "power" (−r1·d^r2)

    def __post_init__(self) -> None:
        if self.kernel not in ("log", "power"):
            raise ValueError(f"positional.kerple.kernel must be one of log, power; got {self.kernel!r}")


class KERPLEPositionalEncoding(PositionalEncoding):
    Options = KERPLEOptions
    source = "Chi et al. 2022, arXiv 2205.09921; reference code chijames/KERPLE (ParallelKerpleLog, ParallelKerplePower)"

    def __init__(self, *, d_model: int, n_heads: int, causal: bool = False, n_layers: int = 1,
                 kernel: str) -> None:
        super().__init__(d_model=d_model, n_heads=n_heads, causal=causal, n_layers=n_layers)
        self.kernel = kernel
        # the reference's init: log: r1 ~ U(0, 2), r2 ~ U(0, 1); power: exponent ~ U(0, 2), coefficient ~ U(0, 1)
        first, second = torch.rand(n_heads) * 2, torch.rand(n_heads)
        self.coefficient = nn.Parameter(first if kernel == "log" else second)  # r1 (H,)
        self.rate = nn.Parameter(second if kernel == "log" else first)  # r2 (H,): inside the log, or the exponent

    def kernel_bias(self, distance: torch.Tensor) -> torch.Tensor:
        """distance (H, Tq, Tk) ≥ 0 -> the kernel's bias (H, Tq, Tk) ≤ 0 (module docstring)."""
        r1 = straight_through_clamp(self.coefficient, FLOOR)[:, None, None]
        if self.kernel == "log":
            r2 = straight_through_clamp(self.rate, FLOOR)[:, None, None]
            return -r1 * torch.log1p(r2 * distance)
        r2 = straight_through_clamp(self.rate, FLOOR, 2.0)[:, None, None]
        # d^r2 at d = 0 is 0 for r2 > 0; its gradient there (log 0) is masked out of the step below
        return -r1 * torch.where(distance > 0, distance.clamp(min=1.0) ** r2, torch.zeros_like(distance))

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = directed_distances(q_pos, k_pos, self.n_heads, self.causal)  # (H, Tq, Tk), −1: unwatched side
        bias = self.kernel_bias(distance.clamp(min=0.0).to(self.coefficient.dtype))
        return bias.masked_fill(distance < 0, float("-inf"))

    def describe(self, usage: Usage) -> str:
        kernel = ("log kernel −r1·log(1 + r2·d), the paper's best" if self.kernel == "log" else
                  "power kernel −r1·d^r2 (the paper's other; `kernel: log` is its best)")
        encoder = ("" if self.causal else "; in an encoder the even heads look left and the odd heads right (the "
                   "paper is causal; pelab's `alibi` convention)")
        return f"the {kernel}, r1 and r2 learned per head and shared by every layer, as its reference code{encoder}."
