"""How fast a profile's main study could train on this machine: the matrix-multiply floor beside the measured time.

    python benchmarks/compute_floor.py [--device cpu] [--size quick] [--steps 30] [--smoke] [--out FILE]

For each study (copy, translation) at the profile's model and batch sizes (``bench_seeds.SIZES``; translation
with sentences of 16 tokens, about Multi30k's mean), one training step of the real code (``training.loop.train``,
rope) is

* counted: the FLOPs of its matrix products, forward and backward (``torch.utils.flop_counter``: mm, addmm,
  bmm, attention), and
* timed: ``--steps`` steps after a warm-up, the better of two runs (model construction included, a few ms).

The machine's matrix-multiply rate is measured on the step's own largest product and on a 1024³ one (the
better of the two is the rate a perfect implementation would get). Then, for the profile's whole main study
(every scheme of ``pe=all`` × every seed × the profile's steps, composed from ``conf/``):

* ``measured_min``: the training time at the measured step time, and
* ``floor_min``: the time of the matrix products alone at the machine's rate, with every other operation free.

No implementation of these models at these sizes trains faster than the floor on this machine; a goal below
it needs a smaller profile (fewer steps, schemes, seeds or a smaller model), not faster code.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import click
import torch
from _common import device_name, wall_s, write_results
from bench_seeds import SIZES, batches, build
from torch.utils.flop_counter import FlopCounterMode

from pelab.compose import compose_params
from pelab.config import TrainConfig
from pelab.tasks.copy.task import copy_loss
from pelab.tasks.translation.task import make_loss
from pelab.training.loop import train


def matmul_rate(m: int, k: int, n: int, device: torch.device, repeats: int) -> float:
    """GFLOP/s of an (m, k) @ (k, n) product, the median of ``repeats`` after a warm-up."""
    a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
    a @ b
    times = [wall_s(lambda: a @ b, device) for _ in range(repeats)]
    return 2 * m * k * n / statistics.median(times) / 1e9


def step_flops_and_ms(study: str, size: dict, steps: int, device: torch.device) -> tuple[float, float]:
    """(matmul GFLOP of one training step, ms per step over ``steps`` steps, the better of two runs) for rope."""
    loss = copy_loss if study == "copy" else make_loss(0.1)
    data = batches(study, size, 0, steps)

    def config(n: int) -> TrainConfig:
        return TrainConfig(steps=n, batch_size=size["batch"], lr=1e-3, warmup_steps=1, log_every=n)

    counter = FlopCounterMode(display=False)
    with counter:
        train([build(study, "rope", size, 0)], [data], loss, config(1), device, desc="count")
    train([build(study, "rope", size, 0)], [data], loss, config(steps), device, desc="warm-up")
    seconds = min(wall_s(lambda: train([build(study, "rope", size, 0)], [data], loss, config(steps), device,
                                       desc="time"), device) for _ in range(2))
    return counter.get_total_flops() / 1e9, seconds / steps * 1000


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--size", type=click.Choice(["quick", "full"]), default="quick", show_default=True)
@click.option("--steps", default=30, show_default=True, help="timed steps per study")
@click.option("--smoke", is_flag=True, help="tiny sizes, 3 steps: checks the script runs (CI)")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(device: str, size: str, steps: int, smoke: bool, out: str | None) -> None:
    dev = torch.device(device)
    sizes = SIZES["smoke" if smoke else size]
    steps = 3 if smoke else steps
    params = compose_params(Path(__file__).resolve().parents[1] / "conf", [f"profile={size}", "pe=all"])
    runs = len(params["pe"]["schemes"]) * len(params["seeds"])
    big = 256 if smoke else 1024
    peak = matmul_rate(big, big, big, dev, 3 if smoke else 10)
    results = {"device": device_name(dev), "threads": torch.get_num_threads(), "torch": torch.__version__,
               "size": size, "smoke": smoke, "runs_per_study": runs, "matmul_gflops_1024": peak, "studies": {}}
    click.echo(f"device={results['device']} threads={results['threads']} torch={torch.__version__} size={size}: "
               f"{runs} runs per study; matmul {peak:.1f} GFLOP/s at {big}^3")
    for study in ("copy", "translation"):
        shape = sizes[study]
        gflop, ms = step_flops_and_ms(study, shape, steps, dev)
        rows = shape["batch"] * shape["seq"]  # the step's largest product: its widest layer over every token
        wide = shape["vocab"] if study == "translation" else shape["ff"]
        rate = max(peak, matmul_rate(rows, shape["d"], wide, dev, 3 if smoke else 10))
        profile_steps = int(params[study]["train"]["steps"])
        measured_min = runs * profile_steps * ms / 1000 / 60
        floor_min = runs * profile_steps * gflop / rate / 60
        results["studies"][study] = {"matmul_gflop_per_step": gflop, "ms_per_step": ms, "matmul_gflops": rate,
                                     "matmul_share": gflop / rate * 1000 / ms, "profile_steps": profile_steps,
                                     "measured_min": measured_min, "floor_min": floor_min}
        click.echo(f"{study:11s} {gflop:6.3f} GFLOP/step, {ms:6.1f} ms/step measured, {gflop / rate * 1000:6.1f} ms "
                   f"at {rate:.0f} GFLOP/s ({gflop / rate * 1000 / ms:.0%} of the step); {runs} x {profile_steps} "
                   f"steps: {measured_min:.1f} min measured, floor {floor_min:.1f} min")
    total = sum(s["measured_min"] for s in results["studies"].values())
    floor = sum(s["floor_min"] for s in results["studies"].values())
    results.update(measured_min=total, floor_min=floor, timestamp=time.strftime("%Y-%m-%d %H:%M:%S"))
    click.echo(f"main study training, {size} profile: {total:.1f} min at the measured step times, floor {floor:.1f} "
               f"min (matrix products alone, at this machine's rate); evaluation, DVC and the report come on top")
    write_results(out, results)


if __name__ == "__main__":
    main()
