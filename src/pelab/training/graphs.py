"""The training step, optionally as CUDA graphs: forward, backward, per-seed clipping and AdamW captured once per
batch shape and replayed, so that a step costs one graph launch instead of about 1,600 kernel launches (a
full-size stacked step is bound by Python and launches, the GPU busy a quarter of the time:
``benchmarks/results/gpu_h100.md``).

The pattern is PyTorch's whole-network capture (https://pytorch.org/docs/stable/notes/cuda.html#whole-network-capture):
a few eager steps on a side stream, then the capture with the gradients set to None (the captured backward
allocates them in the graph's own memory pool), then, every step, the batch copied into the graph's static
inputs and the graph replayed. Capturing records kernels and runs none, and each warm-up step is a real step of
the same function, so the training is the eager step's: the same kernels on the same values
(``benchmarks/bench_graphs.py`` checks the losses side by side on the GPU; ``tests/test_training_loop.py`` the
step function on the CPU, where nothing is captured).

What capture needs, and this module provides: AdamW ``capturable`` with its learning rate a device tensor (the
schedule fills it in place, ``training.loop.adamw``), autocast without its cast cache (a cached cast made inside
a capture is freed on leaving autocast), and models whose forward launches device work only: a scheme that draws
positions on the host (``PositionalEncoding.graph_safe`` False) would have one draw replayed forever, so those
train eagerly. One graph per batch shape, each in its own memory pool; past ``max_graphs`` shapes (translation
batches vary in length) the remaining shapes run eagerly.
"""

from __future__ import annotations

import torch
from torch import nn

from pelab.device import autocast
from pelab.training.stacking import Batch, SeedStack


def graph_safe(models: list[nn.Module]) -> bool:
    """Whether every module of the models launches only device work in training (no host-side draws)."""
    return all(getattr(module, "graph_safe", True) for model in models for module in model.modules())


class TrainStep:
    """``step(batch)`` -> (losses (S,), token counts (S,)): one optimisation step of the seeds - forward, backward,
    clipping, AdamW - on a batch already on the device. Eager, or (``graphs``, CUDA only) replayed from a CUDA graph
    per batch shape after ``warmup`` eager steps. The learning rate is set by the caller's schedule beforehand."""

    def __init__(self, seeds: SeedStack, optimizer: torch.optim.Optimizer, grad_clip: float, device: torch.device,
                 *, graphs: bool = False, warmup: int = 3, max_graphs: int = 32) -> None:
        if graphs and device.type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA device, not {device}")
        self.seeds, self.optimizer, self.grad_clip, self.device = seeds, optimizer, grad_clip, device
        self.graphs, self.warmup, self.max_graphs = graphs, warmup, max_graphs
        self.eager_steps = 0
        self.captured: dict[tuple, tuple[torch.cuda.CUDAGraph, Batch, torch.Tensor, torch.Tensor]] = {}
        self.side = torch.cuda.Stream(device) if graphs else None

    def _step(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        with autocast(self.device, cache=not self.graphs):
            losses, counts = self.seeds.losses(batch)  # (S,), (S,)
        losses.sum().backward()  # the seeds' losses are independent: each gets its own gradient
        if self.grad_clip > 0:
            self.seeds.clip_gradients(self.grad_clip)
        self.optimizer.step()
        return losses.detach(), counts

    def __call__(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.graphs:
            self.optimizer.zero_grad(set_to_none=True)
            return self._step(batch)
        key = tuple((tuple(t.shape), t.dtype) for t in batch)
        if key not in self.captured and (self.eager_steps < self.warmup or len(self.captured) >= self.max_graphs):
            return self._eager_on_side_stream(batch)
        if key not in self.captured:
            self.captured[key] = self._capture(batch)
        graph, inputs, losses, counts = self.captured[key]
        for static, t in zip(inputs, batch):
            static.copy_(t, non_blocking=True)
        graph.replay()
        return losses.clone(), counts.clone()

    def _eager_on_side_stream(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """A real step, on a side stream as capture's warm-up must be; the grads it leaves are dropped."""
        self.side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.side):
            self.optimizer.zero_grad(set_to_none=True)
            losses, counts = self._step(batch)
        torch.cuda.current_stream(self.device).wait_stream(self.side)
        self.eager_steps += 1
        return losses, counts

    def _capture(self, batch: Batch):
        inputs = tuple(t.clone() for t in batch)
        self.optimizer.zero_grad(set_to_none=True)  # the captured backward allocates the grads in the graph's pool
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            losses, counts = self._step(inputs)
        return graph, inputs, losses, counts
