"""pelab's AdamW (``training.adamw``) is torch's fused AdamW to the bit, without importing ``torch._dynamo``."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from pelab.training.adamw import AdamW, Schedule


def _start() -> list[torch.Tensor]:
    torch.manual_seed(0)
    return [torch.randn(5, 4), torch.randn(4), torch.randn(3, 2, 2), torch.randn(7)]


def _grads(step: int, params: list[torch.Tensor]) -> list[torch.Tensor | None]:
    g = torch.Generator().manual_seed(step)
    # a parameter without a gradient on odd steps: both optimizers skip it, its step count unchanged
    return [None if (i == 3 and step % 2) else torch.randn(p.shape, generator=g) * (1 + 10 * i) for i, p in
            enumerate(params)]


def _groups(params):
    return [{"params": params[:1] + params[2:3], "weight_decay": 0.1}, {"params": params[1:2] + params[3:],
                                                                         "weight_decay": 0.0}]


def _train(optimizer, params, steps, schedule=None, first=0):
    for step in range(first, steps):
        for p, g in zip(params, _grads(step, params)):
            p.grad = g
        optimizer.step()
        optimizer.zero_grad()
        if schedule is not None:
            schedule.step()


def test_each_update_is_torch_s_fused_adamw_to_the_bit():
    ours = [torch.nn.Parameter(p.clone()) for p in _start()]
    theirs = [torch.nn.Parameter(p.clone()) for p in _start()]
    a = AdamW(_groups(ours), lr=3e-3, betas=(0.9, 0.98))
    b = torch.optim.AdamW(_groups(theirs), lr=3e-3, betas=(0.9, 0.98), fused=True)
    _train(a, ours, 25, Schedule(a, 3e-3, lambda s: min(1.0, (s + 1) / 5)),)
    _train(b, theirs, 25, torch.optim.lr_scheduler.LambdaLR(b, lambda s: min(1.0, (s + 1) / 5)))
    for x, y in zip(ours, theirs):
        assert torch.equal(x, y)
    assert not torch.equal(ours[0], _start()[0])  # it moved
    assert float(a.state[ours[3]]["step"]) == 13.0 == float(b.state[theirs[3]]["step"])  # 25 steps, 12 without grad


def test_the_schedule_sets_lambda_lr_s_rates():
    factor = lambda s: 0.5 * (1 + s % 3)  # noqa: E731
    p = torch.nn.Parameter(torch.zeros(2))
    a = AdamW([{"params": [p]}], lr=2e-3)
    b = torch.optim.AdamW([{"params": [torch.nn.Parameter(torch.zeros(2))]}], lr=2e-3)
    ours, theirs = Schedule(a, 2e-3, factor), torch.optim.lr_scheduler.LambdaLR(b, factor)
    for _ in range(6):
        assert ours.lr() == a.param_groups[0]["lr"] == b.param_groups[0]["lr"]
        ours.step()
        b.step()  # no gradients: nothing moves; LambdaLR expects a step first
        theirs.step()
    assert ours.lr() == 2e-3 * factor(6)


@pytest.mark.parametrize("saver", ["pelab", "torch"])
def test_a_saved_state_resumes_to_the_bit_whichever_adamw_saved_it(saver):
    """Saved after 10 steps, loaded into a fresh pelab AdamW, 10 more: the weights of 20 uninterrupted steps."""
    whole = [torch.nn.Parameter(p.clone()) for p in _start()]
    opt = AdamW(_groups(whole), lr=1e-2, betas=(0.9, 0.98))
    _train(opt, whole, 20)

    first = [torch.nn.Parameter(p.clone()) for p in _start()]
    make = (lambda ps: AdamW(_groups(ps), lr=1e-2, betas=(0.9, 0.98))) if saver == "pelab" else (
        lambda ps: torch.optim.AdamW(_groups(ps), lr=1e-2, betas=(0.9, 0.98), fused=True))
    opt = make(first)
    _train(opt, first, 10)
    saved = opt.state_dict()
    second = [torch.nn.Parameter(p.detach().clone()) for p in first]
    resumed = AdamW(_groups(second), lr=1e-2, betas=(0.9, 0.98))
    resumed.load_state_dict(saved)
    _train(resumed, second, 20, first=10)
    for x, y in zip(second, whole):
        assert torch.equal(x, y)


def test_a_state_of_other_groups_is_refused():
    p = torch.nn.Parameter(torch.zeros(2))
    opt = AdamW([{"params": [p]}, {"params": []}], lr=1e-3)
    with pytest.raises(ValueError, match="other parameter groups"):
        opt.load_state_dict(AdamW([{"params": [p]}], lr=1e-3).state_dict())


def test_training_with_it_never_imports_torch_dynamo():
    code = ("import sys, torch\nfrom pelab.config import TrainConfig\nfrom pelab.training.loop import adamw, lr_schedule\n"
            "p = torch.nn.Parameter(torch.ones(3, 3)); o = adamw([p], [], TrainConfig(steps=3, batch_size=1))\n"
            "s = lr_schedule(o, TrainConfig(steps=3, batch_size=1)); p.grad = torch.ones(3, 3); o.step(); s.step()\n"
            "o.load_state_dict(o.state_dict()); print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]
