"""``torch.compile`` over the stacked training step of five seeds: eager against compiled, side by side.

    python benchmarks/bench_compile.py [--device cpu|cuda] [--size quick|full] [--steps 50] [--smoke] [--out FILE]

The pipeline does not compile (docs/profiles.md): on the 2-core CPU it gains nothing. On a GPU a
stacked step is bound by kernel launches (``benchmarks/results/gpu_h100.md``), which is what compiling removes,
so this measures it there before it becomes an option. For each study, rope, the real training code
(``training.loop.train``, its vmapped step through ``torch.compile`` or not), the profile's model and batch sizes:
the compile time (first run), then ``--steps`` steps of each, the better of two alternated rounds, and the final
losses of both (they should agree to float tolerance). Every batch has one shape (translation: 16 tokens); real
translation batches vary in length, which costs recompilations (dynamic shapes) that this leaves out.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import click
import torch
from _common import device_name, wall_s, write_results
from bench_seeds import SIZES, batches, build

import pelab.training.stacking as stacking
from pelab.config import TrainConfig
from pelab.tasks.copy.task import copy_loss
from pelab.tasks.translation.task import make_loss
from pelab.training.loop import train


@contextmanager
def compiled_step(on: bool):
    """While open, the stacked step that ``training.stacking.SeedStack`` builds with ``vmap`` is compiled (the
    pipeline itself never compiles)."""
    vmap = stacking.vmap
    if on:
        stacking.vmap = lambda *args, **kwargs: torch.compile(vmap(*args, **kwargs))
    try:
        yield
    finally:
        stacking.vmap = vmap


def measure(study: str, size: dict, seeds: int, steps: int, device: torch.device) -> dict:
    cfg = TrainConfig(steps=steps, batch_size=size["batch"], lr=1e-3, warmup_steps=max(1, steps // 10),
                      weight_decay=0.01, grad_clip=1.0, log_every=steps)
    loss = copy_loss if study == "copy" else make_loss(0.1)
    pad = None if study == "copy" else (0, 0, 0)
    data = [batches(study, size, s, steps) for s in range(seeds)]

    def fit(compiled: bool) -> float:
        models = [build(study, "rope", size, s) for s in range(seeds)]
        with compiled_step(compiled):
            results = train(models, data, loss, cfg, device, pad_values=pad, desc=study)
        return results[0].history[-1]["loss"]

    tick = time.perf_counter()
    fit(True)  # compiles
    compile_s = time.perf_counter() - tick
    fit(False)  # warm-up
    times: dict[bool, list[float]] = {False: [], True: []}
    losses: dict[bool, float] = {}
    for _ in range(2):
        for on in (False, True):
            times[on].append(wall_s(lambda on=on: losses.__setitem__(on, fit(on)), device))
    eager, compiled = min(times[False]), min(times[True])
    return {"eager_s": eager, "compiled_s": compiled, "speedup": eager / compiled, "compile_s": compile_s,
            "loss_eager": losses[False], "loss_compiled": losses[True]}


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--size", type=click.Choice(["quick", "full"]), default="quick", show_default=True)
@click.option("--seeds", default=5, show_default=True)
@click.option("--steps", default=50, show_default=True)
@click.option("--study", "studies", type=click.Choice(["copy", "translation"]), multiple=True,
              default=("copy", "translation"), show_default=True)
@click.option("--smoke", is_flag=True, help="tiny sizes, 2 seeds, 3 steps: checks the script runs (CI)")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(device: str, size: str, seeds: int, steps: int, studies: tuple[str, ...], smoke: bool,
         out: str | None) -> None:
    dev = torch.device(device)
    sizes, seeds, steps = (SIZES["smoke"], 2, 3) if smoke else (SIZES[size], seeds, steps)
    results = {"device": device_name(dev), "threads": torch.get_num_threads(), "torch": torch.__version__,
               "size": "smoke" if smoke else size, "seeds": seeds, "steps": steps, "studies": {}}
    click.echo(f"device={results['device']} threads={results['threads']} torch={torch.__version__} "
               f"size={results['size']} seeds={seeds} steps={steps}")
    for study in studies:
        r = results["studies"][study] = measure(study, sizes[study], seeds, steps, dev)
        click.echo(f"{study:11s} rope: eager {r['eager_s']:6.2f} s, compiled {r['compiled_s']:6.2f} s, speedup "
                   f"{r['speedup']:.2f}x (compile {r['compile_s']:.0f} s); final loss {r['loss_eager']:.5f} eager, "
                   f"{r['loss_compiled']:.5f} compiled")
    write_results(out, results)


if __name__ == "__main__":
    main()
