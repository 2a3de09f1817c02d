"""Where a training step's time goes: torch.profiler over a few steps of one study at a profile's size.

    python benchmarks/profile_step.py [--device cuda] [--study translation] [--size full] [--seeds 5] [--steps 20]
                                      [--sort self_cuda_time_total] [--graphs]

Prints the step time (sequential one seed, and ``--seeds`` vectorised), then the profiler's table of the
vectorised steps sorted by ``--sort`` (default self CPU time): on a GPU a step whose CPU time far exceeds its CUDA
time is bound by Python and kernel launches, not by the GPU. The length and LM studies are at the full profile's
shapes (``bench_graphs.FULL``) whatever ``--size``.
"""

from __future__ import annotations

import click
import torch
from _common import wall_s
import bench_graphs
import bench_seeds
from torch.profiler import ProfilerActivity, profile

from pelab.config import TrainConfig
from pelab.training.loop import train


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--study", type=click.Choice(list(bench_graphs.FULL)), default="translation", show_default=True)
@click.option("--size", type=click.Choice(["quick", "full"]), default="full", show_default=True)
@click.option("--seeds", default=5, show_default=True)
@click.option("--steps", default=20, show_default=True)
@click.option("--rows", default=20, show_default=True)
@click.option("--sort", default="self_cpu_time_total", show_default=True, help="the profiler table's sort key")
@click.option("--graphs", is_flag=True, help="the vectorised steps as CUDA graphs (training.graphs)")
def main(device: str, study: str, size: str, seeds: int, steps: int, rows: int, sort: str, graphs: bool) -> None:
    dev = torch.device(device)
    if study in bench_seeds.SIZES[size]:
        shape, batches, build = bench_seeds.SIZES[size][study], bench_seeds.batches, bench_seeds.build
    else:
        shape, batches, build = bench_graphs.FULL[study], bench_graphs.batches, bench_graphs.build
    cfg = TrainConfig(steps=steps, batch_size=shape["batch"], lr=1e-3, warmup_steps=1, log_every=steps)
    loss = bench_graphs.LOSSES[study]
    pad = bench_graphs.PADDING[study]
    data = [batches(study, shape, s, steps) for s in range(seeds)]

    def timed(fn) -> float:  # ms per step
        return wall_s(fn, dev) / steps * 1000

    model = build(study, "rope", shape, 0)
    train([model], data[:1], loss, cfg, dev)  # warm-up
    one = timed(lambda: train([build(study, "rope", shape, 0)], data[:1], loss, cfg, dev))
    train([build(study, "rope", shape, s) for s in range(seeds)], data, loss, cfg, dev, pad_values=pad, graphs=graphs)
    models = [build(study, "rope", shape, s) for s in range(seeds)]
    many = timed(lambda: train(models, data, loss, cfg, dev, pad_values=pad, graphs=graphs))
    click.echo(f"{study} {size} rope: {one:.1f} ms per step for one seed, {many:.1f} ms per step for {seeds} "
               f"seeds together ({seeds * one / many:.2f}x)")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    models = [build(study, "rope", shape, s) for s in range(seeds)]
    with profile(activities=activities) as prof:
        train(models, data, loss, cfg, dev, pad_values=pad, graphs=graphs)
    click.echo(prof.key_averages().table(sort_by=sort, row_limit=rows))


if __name__ == "__main__":
    main()
