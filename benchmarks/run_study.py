"""Run a study's stages without DVC, several at a time, and time each: for a GPU box where DVC is not
installed, or to measure how a study's wall time splits between stages.

    python benchmarks/run_study.py --params params.yaml [--workers N] [--length] [--no-report] [--out FILE]

The stages are the pipeline's own scripts with the pipeline files' arguments (prepare, then each run stage's
training and its scoring as two timed phases: stages/run.py without --results, `pelab evaluate`; aggregate,
report), in the pipeline's order; the training and scoring of different (task, scheme) pairs run ``--workers`` at a time, the longest task first. Nothing is cached: for
caching, sharing and resuming use ``dvc repro``. On CUDA, GPU memory and utilisation are sampled every second
(nvidia-smi). Each stage's threads are limited to its share of the cores (OMP_NUM_THREADS = cores / workers,
unless set). Writes ``--out`` (JSON): per stage its seconds and exit status, the whole wall time, the GPU samples.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import yaml

STAGES = "stages"
env = {**os.environ, "TQDM_DISABLE": "1"}


def run_stage(name: str, argv: list[str], log_dir: Path, done: Path | None = None) -> dict:
    if done is not None and done.exists():
        print(f"done   {name}", flush=True)
        return {"stage": name, "seconds": 0.0, "returncode": 0, "skipped": True}
    start = time.perf_counter()
    with open(log_dir / f"{name.replace('@', '_')}.log", "w") as log:
        code = subprocess.run([sys.executable, *argv], stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.perf_counter() - start
    print(f"{'ok ' if code == 0 else 'FAILED'} {name:40s} {seconds:8.1f} s", flush=True)
    return {"stage": name, "seconds": seconds, "returncode": code}


def gpu_sampler(stop: threading.Event, samples: list[dict]) -> None:
    if shutil.which("nvidia-smi") is None:
        return
    while not stop.wait(1.0):
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout.strip().splitlines()
        if out:
            used, util = (float(v) for v in out[0].split(","))
            samples.append({"t": time.time(), "memory_used_mib": used, "utilization_pct": util})


@click.command()
@click.option("--params", "params_path", default="params.yaml", show_default=True)
@click.option("--workers", default=4, show_default=True, help="training/evaluation stages at a time")
@click.option("--length", is_flag=True, help="also the length study (params length_tasks, length_schemes)")
@click.option("--no-report", is_flag=True, help="stop after aggregate")
@click.option("--logs", default="study_logs", show_default=True)
@click.option("--skip-done", is_flag=True, help="skip stages whose outputs exist (continue a stopped study)")
@click.option("--save-every", default=300.0, show_default=True,
              help="seconds between saves of a stacked training stage's state (a killed study resumes from it)")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(params_path: str, workers: int, length: bool, no_report: bool, logs: str, skip_done: bool,
         save_every: float, out: str | None) -> None:
    params = yaml.safe_load(Path(params_path).read_text())
    # Each stage gets its share of the cores: N processes of all-core thread pools oversubscribe the CPU, and
    # their spinning threads slowed three concurrent copy stages on a 16-core GPU box by more than 4x.
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
    log_dir = Path(logs)
    log_dir.mkdir(parents=True, exist_ok=True)
    p = ["--params", params_path]
    tasks, schemes, seeds = params["tasks"], params["pe"]["schemes"], params["seeds"]
    length_tasks = params.get("length_tasks", []) if length else []
    cost = {"translation": 0, "copy": 1}  # longest first
    pairs = sorted([(t, s) for t in tasks for s in schemes], key=lambda ts: cost.get(ts[0], 2))
    runs: list[dict] = []
    samples: list[dict] = []
    stop = threading.Event()
    sampler = threading.Thread(target=gpu_sampler, args=(stop, samples), daemon=True)
    sampler.start()
    start = time.perf_counter()

    def save(done: bool = False) -> None:
        if not out:
            return
        wall = time.perf_counter() - start
        peak = max((s["memory_used_mib"] for s in samples), default=None)
        util = sum(s["utilization_pct"] for s in samples) / len(samples) if samples else None
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps({"params": params_path, "workers": workers, "finished": done, "wall_s": wall,
                                         "gpu_peak_memory_used_mib": peak, "gpu_mean_utilization_pct": util,
                                         "stages": runs, "gpu_samples": samples}, indent=1) + "\n")

    def output(argv: list[str]) -> Path | None:
        """The stage's output that exists once it is done (--out, or the last seed's run), if --skip-done."""
        if not skip_done or ("--out" not in argv and "--task" not in argv):
            return None
        if "--out" in argv:
            return Path(argv[argv.index("--out") + 1])
        task, scheme = argv[argv.index("--task") + 1], argv[argv.index("--scheme") + 1]
        seed = argv[argv.index("--seed") + 1] if "--seed" in argv else seeds[-1]
        return Path("runs") / task / scheme / f"seed_{seed}"

    def phase(name: str, jobs: list[tuple[str, list[str]]], width: int) -> None:
        tick = time.perf_counter()
        with ThreadPoolExecutor(max_workers=width) as pool:
            results = list(pool.map(lambda job: run_stage(job[0], job[1], log_dir, output(job[1])), jobs))
        runs.extend(results)
        print(f"== {name}: {time.perf_counter() - tick:.1f} s", flush=True)
        save()
        failed = [r["stage"] for r in results if r["returncode"]]
        if failed:
            raise SystemExit(f"stages failed: {failed}; see {log_dir}/")

    phase("prepare", [(f"prepare@{t}", [f"{STAGES}/prepare.py", *p, "--task", t, "--out", f"data/{t}"])
                      for t in [*tasks, *length_tasks]], workers)
    train_jobs = [(f"train@{t}-{s}", [f"{STAGES}/run.py", *p, "--task", t, "--scheme", s, "--data", f"data/{t}",
                                      "--runs", "runs", "--save-every", str(save_every)]) for t, s in pairs]
    train_jobs += [(f"train_length@{t}-{s}", [f"{STAGES}/run.py", *p, "--task", t, "--scheme", s, "--data",
                                              f"data/{t}", "--runs", "runs", "--save-every", str(save_every)])
                   for t in length_tasks for s in params["length_schemes"]]
    phase("train", train_jobs, workers)
    eval_pairs = pairs + [(t, s) for t in length_tasks for s in params["length_schemes"]]
    phase("evaluate", [(f"evaluate@{t}-{s}", ["-m", "pelab.cli", "evaluate", *p, "--task", t, "--scheme", s, "--runs",
                                               "runs", "--data", f"data/{t}", "--out", f"results/{t}/{s}"])
                       for t, s in eval_pairs], workers)
    phase("aggregate", [("aggregate", [f"{STAGES}/aggregate.py", *p, "--runs", "runs", "--results", "results",
                                       "--metrics", "reports/metrics", "--summary", "reports/summary.json",
                                       "--records", "reports/records.csv", "--plots", "reports/plots",
                                       "--study", "reports/study.json", "--tuning", "reports/tuning.json"])], 1)
    if not no_report:
        phase("report", [("report", [f"{STAGES}/report.py", "--study", "reports/study.json", "--records",
                                     "reports/records.csv", "--plots", "reports/plots", "--runs", "runs", "--results",
                                     "results", "--tuning", "reports/tuning.json", "--figures", "reports/figures",
                                     "--out", "reports/report.md"])], 1)
    wall = time.perf_counter() - start
    stop.set()
    print(f"whole study: {wall:.1f} s ({wall / 60:.1f} min) with {workers} stages at a time", flush=True)
    save(done=True)


if __name__ == "__main__":
    main()
