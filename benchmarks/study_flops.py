"""The full study's training FLOPs, study by study, against a device's dense bf16 rate and the measured step times.

    python benchmarks/study_flops.py [--profile full] [--rate-tflops 989] [--smoke] [--out FILE]

For each study (copy; translation at sentences of 16 tokens, about Multi30k's mean; every length task at each of
its training lengths 1..N, which the schedule draws uniformly; the LM at context L), one training step of one seed
of the real model (``bench_graphs.build``, rope) on a batch of the profile's shape is **counted** with
``torch.utils.flop_counter`` (the matrix products forward and backward: linear layers, attention, the output
layer). The study's training FLOPs are that × the profile's steps × every run (tasks × schemes × seeds), and tuning
adds, per (task, scheme), two sweep runs (scales 0.5 and 2 of the tune seed) and, where another scale wins, the
other seeds at it: between 2 and 6 runs more per 5 (× 1.4 to × 2.2), reported as both bounds.

The **floor** is those FLOPs at a device's dense bf16 rate (``--rate-tflops``: the H100 SXM's datasheet 989 by
default; ``--measure`` times a bf16 product on the device this runs on instead). Every other operation is free at
the floor, so no implementation trains the study faster on that device. Beside it, where a GPU measurement exists
(``benchmarks/results/gpu_h200_graphs.md``: the graphed step, five seeds stacked, H200), the study's training time
at those step times and its ratio to the floor. Evaluation (greedy decoding, beam search, perplexity to 8L) is not
counted.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import click
import torch
from _common import device_name, write_results
from bench_graphs import FULL, LOSSES, SMOKE, build
from torch.utils.flop_counter import FlopCounterMode

from pelab.compose import compose_params
from pelab.tasks import get_task

# the graphed step of five stacked seeds on one H200, ms (benchmarks/results/gpu_h200_graphs.md; translation eager)
H200_STEP_MS = {"copy": 4.05, "translation": 42.30, "length": 5.28, "length_causal": 5.43, "lm": 51.92}


def step_flops(study: str, size: dict, rows: int) -> float:
    """FLOPs of one seed's training step (forward and backward) on a batch of ``size["batch"]`` rows of ``rows``
    tokens (translation: source and target)."""
    model = build(study, "rope", size, 0)
    b, gen = size["batch"], torch.Generator().manual_seed(0)
    if study == "translation":
        src = torch.randint(4, size["vocab"], (b, rows), generator=gen)
        tgt = torch.randint(4, size["vocab"], (b, rows + 1), generator=gen)
        batch = (src, tgt[:, :-1], tgt[:, 1:])
    else:
        x = torch.randint(0, size["vocab"], (b, rows + 1), generator=gen)
        batch = (x[:, :-1], x[:, 1:])
    counter = FlopCounterMode(display=False)
    with counter:
        loss, _ = LOSSES[study](model, batch)
        loss.backward()
    return float(counter.get_total_flops())


def length_task_flops(task: str, size: dict, cfg: dict, train_max: int) -> float:
    """Mean FLOPs of a step of length task ``task``: each training length n in 1..N equally often, its rows the
    task's row length at n (question, separator, answer)."""
    from pelab.tasks.length.config import LengthDataConfig

    data = LengthDataConfig(**cfg)
    layout = "length_causal" if task.endswith("_causal") else "length"
    return sum(step_flops(layout, size, get_task(task).row_length(data, n)) for n in range(1, train_max + 1)) / train_max


def measured_rate_tflops(device: torch.device) -> float:
    """Dense bf16 TFLOP/s of an 8192³ product on ``device`` (the median of 10 after a warm-up)."""
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    times = []
    for _ in range(11):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        a @ a
        torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return 2 * 8192**3 / sorted(times[1:])[5] / 1e12


@click.command()
@click.option("--profile", default="full", show_default=True)
@click.option("--rate-tflops", default=989.0, show_default=True, help="the device's dense bf16 TFLOP/s")
@click.option("--measure", is_flag=True, help="measure the rate on this machine's GPU instead")
@click.option("--device", default="cpu", show_default=True, help="where the counting runs (the count is the same)")
@click.option("--smoke", is_flag=True, help="tiny shapes, two length steps: checks the script runs (CI)")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(profile: str, rate_tflops: float, measure: bool, device: str, smoke: bool, out: str | None) -> None:
    params = compose_params(Path(__file__).resolve().parents[1] / "conf", [f"profile={profile}", "pe=all"])
    sizes = SMOKE if smoke else FULL
    if measure:
        rate_tflops = measured_rate_tflops(torch.device("cuda"))
    seeds = len(params["seeds"])
    studies: dict[str, dict] = {}

    def add(study: str, schemes: int, flops: dict[str, float], steps: int, step_ms: dict[str, float]) -> None:
        """One study: ``flops`` and ``step_ms`` (five seeds stacked, H200) per task."""
        runs = len(flops) * schemes * seeds
        total = sum(flops.values()) * schemes * seeds * steps
        floor_min = total / (rate_tflops * 1e12) / 60
        measured = sum(step_ms.values()) * schemes * math.ceil(seeds / 5) * steps / 1000 / 60
        studies[study] = {"tasks": list(flops), "runs": runs, "steps": steps,
                          "gflop_per_step": {t: f / 1e9 for t, f in flops.items()}, "train_pflop": total / 1e15,
                          "floor_min": floor_min, "with_tuning_floor_min": [floor_min * 1.4, floor_min * 2.2],
                          "h200_step_ms": step_ms, "h200_min": measured, "h200_over_floor": measured / floor_min}
        click.echo(f"{study:12s} {runs:4d} runs x {steps:5d} steps, {total / 1e15:9.3f} PFLOP: floor {floor_min:6.2f} "
                   f"min at {rate_tflops:g} TFLOP/s; at the H200's measured step {measured:6.1f} min "
                   f"({measured / floor_min:.0f}x the floor)")

    def steps_of(section: str) -> int:
        return 3 if smoke else int(params[section]["train"]["steps"])

    for study in ("copy", "translation"):
        add(study, len(params["pe"]["schemes"]), {study: step_flops(study, sizes[study], sizes[study]["seq"])},
            steps_of(study), {study: H200_STEP_MS[study]})
    length = params["length"]
    train_max = 2 if smoke else int(length["data"]["train_max"])
    tasks = params["length_tasks"]
    add("length", len(params["length_schemes"]),
        {t: length_task_flops(t, sizes["length"], length["data"], train_max) for t in tasks}, steps_of("length"),
        {t: H200_STEP_MS["length_causal" if t.endswith("_causal") else "length"] for t in tasks})
    if params["lm_tasks"]:
        add("lm", len(params["lm_schemes"]), {"lm": step_flops("lm", sizes["lm"], sizes["lm"]["seq"])},
            steps_of("lm"), {"lm": H200_STEP_MS["lm"]})
    floor = sum(s["floor_min"] for s in studies.values())
    results = {"profile": profile, "smoke": smoke, "rate_tflops": rate_tflops, "rate_source": "measured" if measure
               else "datasheet", "device": device_name(torch.device("cuda")) if measure else "not measured",
               "torch": torch.__version__, "seeds": seeds, "studies": studies, "floor_min": floor,
               "with_tuning_floor_min": [sum(s["with_tuning_floor_min"][i] for s in studies.values()) for i in (0, 1)],
               "timestamp": time.strftime("%Y-%m-%d %H:%M:%S")}
    click.echo(f"the {profile} profile's training: floor {floor:.1f} min at {rate_tflops:g} TFLOP/s; with tuning "
               f"{results['with_tuning_floor_min'][0]:.1f}-{results['with_tuning_floor_min'][1]:.1f} min")
    write_results(out, results)


if __name__ == "__main__":
    main()
