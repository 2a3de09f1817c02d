"""AdamW and its learning-rate schedule without ``torch.optim``'s base classes.

Constructing any ``torch.optim.Optimizer`` imports ``torch._dynamo`` (its ``add_param_group`` and ``step`` are
wrapped to keep the compiler out): 1.9-2.0 s of every training process on a 2-core CPU, a quarter of a smoke
run stage's floor (benchmarks/results/suite_time.md, 2026-11-28 (3)). ``AdamW`` here calls the very kernel
``torch.optim.AdamW(fused=True)`` calls (``torch._fused_adamw_``), grouped and counted the same way, so its
updates are bit-for-bit torch's (tests/test_adamw.py); its ``state_dict`` has torch's layout, so a state saved
by either loads into either. CUDA graphs keep ``torch.optim.AdamW(capturable=True)`` (``training.loop.adamw``).

The update (Loshchilov & Hutter 2019, https://arxiv.org/abs/1711.05101, Algorithm 2), per parameter p, step t:
p <- p (1 - lr wd); m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g²; p <- p - lr m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch


class AdamW:
    """``torch.optim.AdamW(groups, lr, betas, eps, fused=True)``'s update and state; ``param_groups`` are dicts
    with ``params``, ``lr`` and ``weight_decay`` (the schedule writes ``lr``)."""

    def __init__(self, groups: Iterable[dict[str, Any]], *, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.param_groups = [{"lr": lr, "betas": betas, "eps": eps, "weight_decay": 0.01, **group,
                              "params": list(group["params"])} for group in groups]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    def _state(self, p: torch.Tensor) -> dict[str, torch.Tensor]:
        if p not in self.state:  # as torch's fused AdamW: the step a float32 scalar on the parameter's device
            self.state[p] = {"step": torch.zeros((), dtype=torch.float32, device=p.device),
                             "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                             "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}
        return self.state[p]

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            by_kind: dict[tuple[torch.device, torch.dtype], list[torch.Tensor]] = {}
            for p in group["params"]:
                if p.grad is not None:
                    by_kind.setdefault((p.device, p.dtype), []).append(p)
            for params in by_kind.values():
                states = [self._state(p) for p in params]
                steps = [s["step"] for s in states]
                torch._foreach_add_(steps, 1)
                torch._fused_adamw_(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                                    [s["exp_avg_sq"] for s in states], [], steps, lr=group["lr"], beta1=beta1,
                                    beta2=beta2, weight_decay=group["weight_decay"], eps=group["eps"],
                                    amsgrad=False, maximize=False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    def state_dict(self) -> dict[str, Any]:
        """torch's layout: ``state`` by parameter index (counted across groups), ``param_groups`` with indices."""
        index = {}
        groups = []
        for group in self.param_groups:
            ids = [index.setdefault(p, len(index)) for p in group["params"]]
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        return {"state": {index[p]: dict(s) for p, s in self.state.items()}, "param_groups": groups}

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        params = [p for group in self.param_groups for p in group["params"]]
        if [len(g["params"]) for g in saved["param_groups"]] != [len(g["params"]) for g in self.param_groups]:
            raise ValueError("the saved optimizer state holds other parameter groups than this optimizer")
        self.state = {}
        for i, s in saved["state"].items():
            p = params[int(i)]
            self.state[p] = {"step": s["step"].to(torch.float32).to(p.device).reshape(()),
                             "exp_avg": s["exp_avg"].to(p), "exp_avg_sq": s["exp_avg_sq"].to(p)}
        for group, g in zip(self.param_groups, saved["param_groups"]):
            group.update({k: v for k, v in g.items() if k in ("betas", "eps", "weight_decay")})  # lr: the schedule's


class Schedule:
    """``torch.optim.lr_scheduler.LambdaLR``'s rule for one base rate: before step s every group's lr is
    ``base * factor(s)`` (a float, or filled into a device tensor where the optimizer is capturable)."""

    def __init__(self, optimizer: AdamW | torch.optim.Optimizer, base: float, factor: Callable[[int], float]) -> None:
        self.optimizer, self.base, self.factor = optimizer, float(base), factor
        self.last_step = 0
        self._apply()

    def lr(self) -> float:
        """The rate of the next step."""
        return self.base * self.factor(self.last_step)

    def _apply(self) -> None:
        lr = self.lr()
        for group in self.optimizer.param_groups:
            if isinstance(group["lr"], torch.Tensor):
                group["lr"].fill_(lr)
            else:
                group["lr"] = lr

    def step(self) -> None:
        self.last_step += 1
        self._apply()

    def state_dict(self) -> dict[str, int]:
        return {"last_step": self.last_step}

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        self.last_step = int(saved["last_step"] if "last_step" in saved else saved["last_epoch"])  # or LambdaLR's
        self._apply()
