"""Five seeds trained together (``pelab.training.loop.train``, stacked) against the same five trained one
after another (one seed per call of the same function), side by side in one run.

    python benchmarks/bench_seeds.py [--device cpu|cuda] [--size quick|full] [--steps N] [--smoke] [--out FILE]

Both sides run the real training code on the real models of the copy encoder and the translation
encoder-decoder, at the profile's sizes (``--size``), for the schemes sinusoidal, rope, alibi and t5: same
steps, same per-seed batches (random tokens of the profile's batch shape, one generator per seed), same
AdamW, schedule and clipping. Models are built before the clock starts (each side trains its own copy of
the same initial weights), so the times are training alone: moving to the device, the optimiser, the steps.
The two are alternated (sequential, vectorised, sequential, ...) and the median
wall time of each is compared: ``speedup`` = sequential / vectorised. ``--smoke`` is a CI-sized check.
"""

from __future__ import annotations

import copy
import statistics

import click
import torch
from _common import device_name, wall_s, write_results

from pelab.config import TrainConfig
from pelab.positional import scheme_options
from pelab.tasks.copy.config import ModelConfig
from pelab.tasks.copy.model import build_copy_model
from pelab.tasks.copy.task import copy_loss
from pelab.tasks.translation.config import Seq2SeqConfig
from pelab.tasks.translation.model import build_seq2seq_model
from pelab.tasks.translation.task import make_loss
from pelab.training.loop import train

SCHEMES = ("sinusoidal", "rope", "alibi", "t5")
SIZES = {  # the profiles' model and batch sizes (conf/profile/*.yaml)
    "smoke": {"copy": dict(d=16, layers=1, heads=2, ff=32, batch=8, seq=12, vocab=12),
              "translation": dict(d=16, layers=1, heads=2, ff=32, batch=4, seq=8, vocab=50)},
    "quick": {"copy": dict(d=64, layers=2, heads=4, ff=256, batch=64, seq=20, vocab=12),
              "translation": dict(d=64, layers=2, heads=4, ff=256, batch=64, seq=16, vocab=2000)},
    "full": {"copy": dict(d=128, layers=2, heads=4, ff=512, batch=256, seq=20, vocab=12),
             "translation": dict(d=512, layers=3, heads=8, ff=2048, batch=128, seq=16, vocab=8000)},
}


def batches(study: str, size: dict, seed: int, steps: int):
    """Random batches of the study's shape, one generator per seed (fixed: each side gets the same)."""
    gen = torch.Generator().manual_seed(seed)
    if study == "copy":
        data = [(torch.randint(0, size["vocab"], (size["batch"], size["seq"]), generator=gen),) * 2
                for _ in range(steps)]
    else:
        data = []
        for _ in range(steps):
            src = torch.randint(4, size["vocab"], (size["batch"], size["seq"]), generator=gen)
            tgt = torch.randint(4, size["vocab"], (size["batch"], size["seq"] + 1), generator=gen)
            data.append((src, tgt[:, :-1], tgt[:, 1:]))
    return lambda step: data[step]


def build(study: str, scheme: str, size: dict, seed: int) -> torch.nn.Module:
    if study == "copy":
        cfg = ModelConfig(d_model=size["d"], n_layers=size["layers"], n_heads=size["heads"], d_ff=size["ff"])
        return build_copy_model(scheme, size["vocab"], cfg, scheme_options(scheme), seed=seed)
    cfg = Seq2SeqConfig(d_model=size["d"], encoder_layers=size["layers"], decoder_layers=size["layers"],
                        n_heads=size["heads"], d_ff=size["ff"], dropout=0.0)
    return build_seq2seq_model(scheme, size["vocab"], cfg, scheme_options(scheme), seed=seed)


def measure(study: str, scheme: str, size: dict, seeds: int, steps: int, device: torch.device, rounds: int) -> dict:
    cfg = TrainConfig(steps=steps, batch_size=size["batch"], lr=1e-3, warmup_steps=max(1, steps // 10),
                      weight_decay=0.01, grad_clip=1.0, log_every=steps)
    loss = copy_loss if study == "copy" else make_loss(0.1)
    data = [batches(study, size, s, steps) for s in range(seeds)]

    initial = [build(study, scheme, size, s) for s in range(seeds)]  # built once, outside the timings
    fresh = [copy.deepcopy(initial) for _ in range(2 * (rounds + 1))]  # each timed side trains its own copy

    def sequential() -> None:
        models = fresh.pop()
        for s in range(seeds):
            train([models[s]], [data[s]], loss, cfg, device, desc="sequential")

    def vectorised() -> None:
        train(fresh.pop(), data, loss, cfg, device, pad_values=None if study == "copy" else (0, 0, 0),
              desc="vectorised")

    times: dict[str, list[float]] = {"sequential": [], "vectorised": []}
    for i in range(rounds + 1):  # the first round warms up (allocator, kernels) and is dropped
        for name, fn in (("sequential", sequential), ("vectorised", vectorised)):
            seconds = wall_s(fn, device)
            if i:
                times[name].append(seconds)
    seq, vec = statistics.median(times["sequential"]), statistics.median(times["vectorised"])
    return {"sequential_s": seq, "vectorised_s": vec, "speedup": seq / vec,
            "seed_steps_per_s_sequential": seeds * steps / seq, "seed_steps_per_s_vectorised": seeds * steps / vec}


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--size", type=click.Choice(["quick", "full"]), default="quick", show_default=True)
@click.option("--seeds", default=5, show_default=True)
@click.option("--steps", default=50, show_default=True)
@click.option("--rounds", default=2, show_default=True)
@click.option("--smoke", is_flag=True, help="tiny sizes, 2 seeds, 3 steps, 1 round: checks the script runs (CI)")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(device: str, size: str, seeds: int, steps: int, rounds: int, smoke: bool, out: str | None) -> None:
    dev = torch.device(device)
    if smoke:
        size, seeds, steps, rounds = "smoke", 2, 3, 1
    results = {"device": device_name(dev),
               "threads": torch.get_num_threads(), "torch": torch.__version__, "size": size, "seeds": seeds,
               "steps": steps, "rounds": rounds, "config": SIZES[size], "copy": {}, "translation": {}}
    click.echo(f"device={results['device']} threads={results['threads']} torch={torch.__version__} size={size} "
               f"seeds={seeds} steps={steps}")
    for study in ("copy", "translation"):
        for scheme in SCHEMES:
            r = results[study][scheme] = measure(study, scheme, SIZES[size][study], seeds, steps, dev, rounds)
            click.echo(f"{study:11s} {scheme:10s} sequential {r['sequential_s']:7.2f} s  vectorised "
                       f"{r['vectorised_s']:7.2f} s  speedup {r['speedup']:.2f}x")
    write_results(out, results)


if __name__ == "__main__":
    main()
