"""The S models the training loop optimises: at S = 1 the model itself, at S > 1 one vectorised model.

Stacked, every parameter gains a leading seed dimension (S, ...) (``torch.func.stack_module_state``) and one
model's forward is mapped over it with ``torch.func.vmap`` (https://pytorch.org/docs/stable/func.html; the
model-ensembling tutorial https://pytorch.org/tutorials/intermediate/ensembling.html). Each step runs every
seed's forward and backward as one set of batched kernels: a tiny model that leaves a GPU (or the CPU's vector
units) idle when trained alone fills it when trained five at a time.

What each seed keeps exactly, so that seed k inside the stack is the run the loop makes of it alone:

* its initial weights: the stack is built from the S models each task built from its own seed;
* its data order: seed k's batches come from its own ``next_batch``; batches of different lengths are padded
  to one shape with the task's padding (``Task.batch_padding``), which masks and losses ignore;
* its optimisation: AdamW is elementwise, so one AdamW over the stacked tensors is S independent AdamWs; the
  gradient is clipped per seed, by that seed's own global norm (``clip_grad_norm_``'s formula);
* its dropout: vmap draws independent masks per seed (``randomness="different"``) from one generator seeded
  by the first seed. They are reproducible, and independent across seeds, but they are not the masks of the
  seed's run alone (vmap has no per-seed generator), so with dropout > 0 a stacked seed is a different - equally
  valid - sample than its run alone. With dropout 0 and no randomized positions (copy, the length study's
  deterministic schemes) the two agree to float tolerance (``tests/test_training_loop.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from pelab.model.attention import MultiHeadAttention

Batch = tuple[torch.Tensor, ...]
LossFn = Callable[[nn.Module, Batch], tuple[torch.Tensor, torch.Tensor | int]]


class SeedStack:
    """``params``: {name: tensor} that the optimiser updates, (S, ...) when stacked, the model's own when S = 1.
    ``losses(batch)`` -> the per-seed mean losses (S,) and token counts (S,); ``batch`` is one seed's batch at
    S = 1, else the S batches stacked (``stack``)."""

    def __init__(self, models: Sequence[nn.Module], loss_fn: LossFn, pad_values: Sequence[int] | None = None) -> None:
        self.models, self.loss_fn, self.pad_values = list(models), loss_fn, pad_values
        self.stacked = len(self.models) > 1
        if not self.stacked:
            self.params, self.buffers = dict(self.models[0].named_parameters()), {}
            return
        self._fused_attention(False)  # explicit attention inside vmap (model.attention.MultiHeadAttention)
        self.params, self.buffers = stack_module_state(self.models)  # leaves that require grad
        template = self.models[0]

        def seed_loss(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], batch: Batch):
            loss, count = loss_fn(_Stateless(template, p, b), batch)
            return loss, as_count(count, loss.device)

        self._batched_loss = vmap(seed_loss, in_dims=(0, 0, 0), randomness="different")

    def stack(self, batches: Sequence[Batch]) -> Batch:
        return stack_batches(batches, self.pad_values) if self.stacked else batches[0]

    def losses(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        if self.stacked:
            return self._batched_loss(self.params, self.buffers, batch)
        loss, count = self.loss_fn(self.models[0], batch)
        return loss.reshape(1), as_count(count, loss.device).reshape(1)

    def clip_gradients(self, max_norm: float) -> None:
        if self.stacked:
            clip_per_seed(list(self.params.values()), max_norm)
        else:
            nn.utils.clip_grad_norm_(self.params.values(), max_norm)

    def for_each(self, call: Callable[[int, nn.Module], None]) -> None:
        """``call(s, model)`` for each seed, its model holding the seed's current weights; training resumes after."""
        self.write_back()
        for s, model in enumerate(self.models):
            call(s, model)
            model.train()
        self._fused_attention(False)

    def write_back(self) -> None:
        """Each model holds its seed's current weights, and runs as it does alone (fused attention)."""
        if self.stacked:
            with torch.no_grad():
                for s, model in enumerate(self.models):
                    for name, p in model.named_parameters():
                        p.copy_(self.params[name][s])
        self._fused_attention(True)

    def _fused_attention(self, fused: bool) -> None:
        if self.stacked:
            for module in self.models[0].modules():
                if isinstance(module, MultiHeadAttention):
                    module.fused = fused


class _Stateless:
    """What a task's loss function sees inside vmap: calling it runs ``module`` with the given parameters."""

    def __init__(self, module: nn.Module, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor]) -> None:
        self.module, self.params, self.buffers = module, params, buffers

    def __call__(self, *args, **kwargs):
        return functional_call(self.module, (self.params, self.buffers), args, kwargs)


def as_count(count: torch.Tensor | int, device: torch.device) -> torch.Tensor:
    """A loss's token count as a device tensor; an int is filled in on the device (no host copy, which a CUDA
    graph cannot capture)."""
    if isinstance(count, torch.Tensor):
        return count
    return torch.full((), count, dtype=torch.long, device=device)


def stack_batches(batches: Sequence[Batch], pad_values: Sequence[int] | None = None) -> Batch:
    """S batches of the same structure -> one batch with a leading seed dimension. Tensors of different shapes
    are padded at the end of every dimension to the largest, with ``pad_values[i]`` for the i-th tensor."""
    out = []
    for i, tensors in enumerate(zip(*batches)):
        shape = [max(t.shape[d] for t in tensors) for d in range(tensors[0].ndim)]
        if any(list(t.shape) != shape for t in tensors):
            if pad_values is None:
                raise ValueError(f"batch tensor {i} differs in shape across seeds and the task gives no padding")
            padded = torch.full((len(tensors), *shape), pad_values[i], dtype=tensors[0].dtype)
            for s, t in enumerate(tensors):
                padded[(s, *(slice(0, n) for n in t.shape))] = t
            out.append(padded)
        else:
            out.append(torch.stack(tensors))
    return tuple(out)


def clip_per_seed(params: Sequence[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Clip each seed's gradient (dimension 0 of every parameter) to global norm ``max_norm``, as
    ``torch.nn.utils.clip_grad_norm_`` does for one model: coef = max_norm / (norm + 1e-6), at most 1.
    Parameters may have any shape: a stacked scalar is (S,), a stacked matrix (S, m, n).
    Returns the per-seed norms before clipping, (S,)."""
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([g.reshape(g.shape[0], -1).float().norm(dim=1) for g in grads]).norm(dim=0)  # (S,)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype).view(-1, *([1] * (g.ndim - 1))))
    return norms
