"""Deterministic seeding that leaves the global RNG state of the caller untouched."""

from __future__ import annotations

import contextlib
import random

import torch


@contextlib.contextmanager
def seeded(seed: int):
    """Run the block with torch's CPU RNG (and Python's) seeded to ``seed``, then restore them."""
    py_state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(py_state)
