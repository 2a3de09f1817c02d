"""The stacked training step as CUDA graphs (``pelab.training.graphs``) against the eager step, side by side, at
the full profile's sizes: is a step still bound by launches, and do the graphs train the same model?

    python benchmarks/bench_graphs.py [--steps-scale 1.0] [--studies copy,length,...] [--smoke] [--out FILE]

For each study (copy; the length study's encoder and decoder-only layouts, one length per step as the task
draws them; the LM; translation at one batch shape), five seeds stacked, the real training loop
(``training.loop.train``) with the profile's model and batch shapes on random tokens:

* time: eager (``graphs=False``) and graphed (``graphs=True``) for N and 3N steps, alternated; the per-step time
  is (t(3N) - t(N)) / 2N, which leaves out set-up and capture; the capture and warm-up cost is t(N) - N x step;
* sameness: the graphed run against the eager step run with the same capturable AdamW (the graph replays those
  kernels: the logged losses should agree to the last bit or to bf16 noise) and against the pipeline's eager run
  (non-capturable AdamW: its bias correction is computed on the host, so float-tolerance agreement);
* capture: for every scheme (``--schemes``), whether its step captures and replays (a scheme that draws
  positions on the host is reported as trained eagerly, by design).

``--smoke`` runs tiny sizes on the CPU, where nothing is captured (CI checks the script runs).
"""

from __future__ import annotations

import copy
import statistics
import time
import traceback

import click
import torch
from _common import device_name, wall_s, write_results

import pelab.training.loop as loop
from pelab.config import TrainConfig
from pelab.model.config import ModelConfig
from pelab.model.sequence import build_sequence_model
from pelab.positional import scheme_options
from pelab.tasks.copy.task import copy_loss
from pelab.tasks.length.data.layout import IGNORE
from pelab.tasks.length.task import length_loss
from pelab.tasks.lm.task import lm_loss
from pelab.tasks.translation.config import Seq2SeqConfig
from pelab.tasks.translation.model import build_seq2seq_model
from pelab.tasks.translation.task import make_loss
from pelab.training.graphs import graph_safe

# the full profile's shapes (params.yaml, profile full): model sizes, batch, sequence length, vocabulary
FULL = {
    "copy": dict(d=128, layers=2, heads=4, ff=512, batch=256, seq=20, vocab=12, steps=100),
    "length": dict(d=128, layers=4, heads=4, ff=512, batch=128, max_n=20, vocab=14, steps=200),
    "length_causal": dict(d=128, layers=4, heads=4, ff=512, batch=128, max_n=20, vocab=14, steps=200),
    "lm": dict(d=256, layers=4, heads=4, ff=1024, batch=64, seq=256, vocab=8192, steps=50),
    "translation": dict(d=512, layers=3, heads=8, ff=2048, batch=128, seq=16, vocab=8000, steps=40),
}
SMOKE = {
    "copy": dict(d=16, layers=1, heads=2, ff=32, batch=8, seq=12, vocab=12, steps=3),
    "length": dict(d=16, layers=1, heads=2, ff=32, batch=4, max_n=5, vocab=14, steps=3),
    "length_causal": dict(d=16, layers=1, heads=2, ff=32, batch=4, max_n=5, vocab=14, steps=3),
    "lm": dict(d=16, layers=1, heads=2, ff=32, batch=4, seq=16, vocab=50, steps=3),
    "translation": dict(d=16, layers=1, heads=2, ff=32, batch=4, seq=8, vocab=50, steps=3),
}


def batches(study: str, size: dict, seed: int, steps: int):
    """Random batches of the study's shapes, one generator per seed; the length study's lengths from one schedule
    that every seed shares (as ``LengthTask.batches`` draws them)."""
    gen, schedule = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(99)
    data = []
    for _ in range(steps):
        b = size["batch"]
        if study == "copy":
            x = torch.randint(0, size["vocab"], (b, size["seq"]), generator=gen)
            data.append((x, x.clone()))
        elif study.startswith("length"):
            n = int(torch.randint(1, size["max_n"] + 1, (1,), generator=schedule))
            tokens = torch.randint(0, size["vocab"], (b, 2 * n + 1), generator=gen)
            targets = tokens.clone()
            targets[:, : n + 1] = IGNORE  # the question and the separator are not scored
            data.append((tokens, targets))
        elif study == "lm":
            x = torch.randint(0, size["vocab"], (b, size["seq"] + 1), generator=gen)
            data.append((x[:, :-1], x[:, 1:]))
        else:
            src = torch.randint(4, size["vocab"], (b, size["seq"]), generator=gen)
            tgt = torch.randint(4, size["vocab"], (b, size["seq"] + 1), generator=gen)
            data.append((src, tgt[:, :-1], tgt[:, 1:]))
    return lambda step: data[step]


def build(study: str, scheme: str, size: dict, seed: int) -> torch.nn.Module:
    if study == "translation":
        cfg = Seq2SeqConfig(d_model=size["d"], encoder_layers=size["layers"], decoder_layers=size["layers"],
                            n_heads=size["heads"], d_ff=size["ff"], dropout=0.0)
        return build_seq2seq_model(scheme, size["vocab"], cfg, scheme_options(scheme), seed=seed)
    cfg = ModelConfig(d_model=size["d"], n_layers=size["layers"], n_heads=size["heads"], d_ff=size["ff"])
    options = scheme_options(scheme, {"max_position": 2048} if scheme.startswith("rand_") else None)
    causal = study in ("lm", "length_causal")
    return build_sequence_model(scheme, size["vocab"], cfg, options, seed, causal=causal)


LOSSES = {"copy": copy_loss, "length": length_loss, "length_causal": length_loss, "lm": lm_loss,
          "translation": make_loss(0.1)}
# how each study's batches are padded to stack (None: one shape always); the length study's pad its targets with
# the ignored label
PADDING = {"copy": None, "length": (0, IGNORE), "length_causal": (0, IGNORE), "lm": None, "translation": (0, 0, 0)}


class EagerCapturable:
    """``loop.TrainStep`` forced eager while the loop still builds the capturable AdamW of the graphed path."""

    def __init__(self, real):
        self.real = real

    def __call__(self, *args, **kwargs):
        kwargs["graphs"] = False
        return self.real(*args, **kwargs)


def fit(study: str, models, size: dict, steps: int, device: torch.device, mode: str) -> list[list[float]]:
    """Train ``models`` for ``steps``; returns each seed's logged losses. mode: eager | graphs | eager_capturable."""
    cfg = TrainConfig(steps=steps, batch_size=size["batch"], lr=1e-3, warmup_steps=max(1, steps // 10),
                      weight_decay=0.01, grad_clip=1.0, log_every=max(1, steps // 10))
    data = [batches(study, size, s, steps) for s in range(len(models))]
    real = loop.TrainStep
    if mode == "eager_capturable":
        loop.TrainStep = EagerCapturable(real)
    try:
        results = loop.train(models, data, LOSSES[study], cfg, device, pad_values=PADDING[study], desc=study,
                             graphs=mode != "eager")
    finally:
        loop.TrainStep = real
    return [[row["loss"] for row in r.history] for r in results]


def max_rel(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) / max(abs(y), 1e-12) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def measure(study: str, scheme: str, size: dict, seeds: int, scale: float, device: torch.device,
            modes: tuple[str, ...] = ("eager", "graphs"), check: bool = True) -> dict:
    steps = max(2, round(size["steps"] * scale))
    initial = [build(study, scheme, size, s) for s in range(seeds)]
    fresh = lambda: copy.deepcopy(initial)  # noqa: E731 - each run trains its own copy of the same weights
    out: dict = {"steps": steps, "graph_safe": graph_safe(initial)}
    fit(study, fresh(), size, 2, device, "eager")  # warm-up: allocator, kernels, cuBLAS handles
    times: dict[str, dict[int, list[float]]] = {m: {steps: [], 3 * steps: []} for m in modes}
    losses: dict[str, list[list[float]]] = {}
    for n in (steps, 3 * steps):
        for mode in modes:
            models = fresh()
            times[mode][n].append(wall_s(lambda: losses.__setitem__((mode, n), fit(study, models, size, n, device,
                                                                                  mode)), device))
    for mode in modes:
        t1, t3 = times[mode][steps][0], times[mode][3 * steps][0]
        out[f"{mode}_step_ms"] = 1000 * (t3 - t1) / (2 * steps)
        out[f"{mode}_fixed_s"] = t1 - steps * (t3 - t1) / (2 * steps)
        out[f"{mode}_{steps}_steps_s"], out[f"{mode}_{3 * steps}_steps_s"] = t1, t3
    if not check or len(modes) < 2:
        return out
    out["speedup"] = out["eager_step_ms"] / out["graphs_step_ms"]
    same = fit(study, fresh(), size, steps, device, "eager_capturable")
    graphed = losses[("graphs", steps)]
    out["graphs_vs_eager_capturable_max_abs"] = max(abs(x - y) for ra, rb in zip(graphed, same) for x, y in zip(ra, rb))
    out["graphs_vs_eager_max_rel"] = max_rel(graphed, losses[("eager", steps)])
    out["final_loss_eager"] = statistics.mean(r[-1] for r in losses[("eager", steps)])
    out["final_loss_graphs"] = statistics.mean(r[-1] for r in graphed)
    return out


def capture_check(study: str, scheme: str, size: dict, device: torch.device) -> dict:
    """A few steps of 2 seeds graphed and eager-capturable: does it capture, and does it replay the same?"""
    steps = 8
    try:
        initial = [build(study, scheme, size, s) for s in range(2)]
    except ValueError as error:  # e.g. xpos in an encoder
        return {"ok": None, "not_applicable": str(error)[:200]}
    safe = graph_safe(initial)
    try:
        graphed = fit(study, copy.deepcopy(initial), size, steps, device, "graphs")
        same = fit(study, copy.deepcopy(initial), size, steps, device, "eager_capturable")
        diff = max(abs(x - y) for ra, rb in zip(graphed, same) for x, y in zip(ra, rb))
        return {"graph_safe": safe, "ok": True, "max_abs_diff": diff}
    except Exception as error:  # noqa: BLE001 - reported, and the next scheme goes on
        return {"graph_safe": safe, "ok": False, "error": f"{type(error).__name__}: {str(error)[:300]}"}


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--studies", default="copy,length,length_causal,lm,translation", show_default=True)
@click.option("--schemes", default="rope", show_default=True, help="timed schemes")
@click.option("--check-schemes", default="none,sinusoidal,learned,rope,alibi,t5,fire,xpos,rand_rope",
              show_default=True, help="schemes whose capture is checked (copy and lm shapes, 8 steps)")
@click.option("--seeds", default=5, show_default=True)
@click.option("--modes", default="eager,graphs", show_default=True, help="timed modes; one alone skips the checks")
@click.option("--no-capture-check", is_flag=True, help="skip the per-scheme capture check")
@click.option("--steps-scale", default=1.0, show_default=True)
@click.option("--budget-s", default=0.0, help="stop starting new measurements after this many seconds (0: none)")
@click.option("--smoke", is_flag=True, help="tiny sizes, 2 seeds: checks the script runs (CI; nothing captured)")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(device: str, studies: str, schemes: str, check_schemes: str, seeds: int, modes: str,
         no_capture_check: bool, steps_scale: float, budget_s: float, smoke: bool, out: str | None) -> None:
    dev = torch.device(device)
    sizes = SMOKE if smoke else FULL
    seeds = 2 if smoke else seeds
    started = time.perf_counter()
    results = {"device": device_name(dev), "torch": torch.__version__, "seeds": seeds, "sizes": sizes,
               "timed": {}, "capture": {}}
    click.echo(f"device={results['device']} torch={torch.__version__} seeds={seeds}")

    def over_budget() -> bool:
        return budget_s > 0 and time.perf_counter() - started > budget_s

    for study in studies.split(","):
        for scheme in schemes.split(","):
            if over_budget():
                break
            key = f"{study}/{scheme}"
            try:
                r = results["timed"][key] = measure(study, scheme, sizes[study], seeds, steps_scale, dev,
                                                    tuple(modes.split(",")))
                if "speedup" not in r:
                    click.echo(f"{key:22s} " + ", ".join(f"{m} {r[f'{m}_step_ms']:7.2f} ms/step" for m in
                                                         modes.split(",")))
                    continue
                click.echo(f"{key:22s} eager {r['eager_step_ms']:7.2f} ms/step, graphs {r['graphs_step_ms']:7.2f} "
                           f"ms/step: {r['speedup']:5.2f}x; capture+set-up {r['graphs_fixed_s']:5.2f} s (eager "
                           f"{r['eager_fixed_s']:5.2f} s); vs eager-capturable max |d loss| "
                           f"{r['graphs_vs_eager_capturable_max_abs']:.2e}, vs eager max rel "
                           f"{r['graphs_vs_eager_max_rel']:.2e}", err=False)
            except Exception:  # noqa: BLE001 - the next study goes on; the trace is kept
                results["timed"][key] = {"error": traceback.format_exc()[-1500:]}
                click.echo(f"{key:22s} FAILED\n{results['timed'][key]['error']}")
            write_results(out, results)
    for study in ("copy", "lm") if dev.type == "cuda" and not no_capture_check else ():
        for scheme in check_schemes.split(","):
            if over_budget():
                break
            r = results["capture"][f"{study}/{scheme}"] = capture_check(study, scheme, sizes[study], dev)
            click.echo(f"capture {study}/{scheme}: {r}")
            write_results(out, results)
    write_results(out, results)


if __name__ == "__main__":
    main()
