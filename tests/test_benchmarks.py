"""The benchmark scripts run, CI-sized (their numbers are measured on an idle machine, benchmarks/results/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]


def bench(script: str, tmp_path: Path, *args: str) -> dict:
    """Run ``benchmarks/<script>`` on the CPU with ``args``; its results file, read back."""
    out = tmp_path / f"{script}.json"
    subprocess.run([sys.executable, str(REPO / "benchmarks" / script), "--device", "cpu", *args, "--out", str(out)],
                   check=True, capture_output=True, text=True)
    return json.loads(out.read_text())


def test_the_x_transformers_comparison_runs_and_reports_a_ratio_per_scheme(tmp_path):
    pytest.importorskip("x_transformers")
    results = bench("bench_xtransformers.py", tmp_path, "--smoke")
    for study in ("copy", "translation"):
        assert set(results[study]) == {"sinusoidal", "rope", "alibi", "t5"}
        assert all(r["x_over_pelab"] > 0 for r in results[study].values())


def test_the_positional_benchmark_runs(tmp_path):
    results = bench("bench_positional.py", tmp_path, "--d-model", "16", "--heads", "2", "--layers", "1", "--seq", "8",
                    "--batch", "2", "--repeats", "1")
    assert "rope" in results["train_step_ms"]


def test_the_seed_benchmark_runs_and_reports_a_speedup_per_study_and_scheme(tmp_path):
    results = bench("bench_seeds.py", tmp_path, "--smoke")
    for study in ("copy", "translation"):
        assert set(results[study]) == {"sinusoidal", "rope", "alibi", "t5"}
        for r in results[study].values():
            assert r["speedup"] == pytest.approx(r["sequential_s"] / r["vectorised_s"]) and r["speedup"] > 0


def test_the_decode_benchmark_runs_greedy_and_beam(tmp_path):
    results = bench("bench_decode.py", tmp_path, "--smoke")
    assert results["greedy"]["beam_size"] == 1 and results["beam"]["beam_size"] == 2
    assert results["greedy"]["sentences_per_s"] > 0 and results["beam"]["sentences_per_s"] > 0


def test_the_compute_floor_counts_matmul_flops_and_bounds_the_profile_below_the_measured_time(tmp_path):
    results = bench("compute_floor.py", tmp_path, "--smoke")
    assert results["runs_per_study"] == 110  # pe=all: 22 schemes (the seven layouts, six of 2022-25) x 5 seeds
    for study in ("copy", "translation"):
        s = results["studies"][study]
        assert s["matmul_gflop_per_step"] > 0 and s["ms_per_step"] > 0
        assert 0 < s["floor_min"] < s["measured_min"]  # the matrix products are part of the step, not all of it
    assert results["floor_min"] == pytest.approx(sum(s["floor_min"] for s in results["studies"].values()))


def test_the_compile_benchmark_compiles_the_stacked_step_to_the_same_losses(tmp_path):
    results = bench("bench_compile.py", tmp_path, "--smoke", "--study", "copy")
    r = results["studies"]["copy"]
    assert r["speedup"] == pytest.approx(r["eager_s"] / r["compiled_s"])
    assert r["loss_compiled"] == pytest.approx(r["loss_eager"], rel=1e-4)


def test_the_graph_benchmark_runs_every_study_and_on_the_cpu_trains_the_same_losses_eagerly(tmp_path):
    results = bench("bench_graphs.py", tmp_path, "--smoke")
    assert set(results["timed"]) == {f"{study}/rope" for study in ("copy", "length", "length_causal", "lm",
                                                                    "translation")}
    for r in results["timed"].values():  # on the CPU nothing is captured: both sides run the same eager step
        assert r["speedup"] == pytest.approx(r["eager_step_ms"] / r["graphs_step_ms"])
        assert r["graphs_vs_eager_capturable_max_abs"] == 0.0 and r["graphs_vs_eager_max_rel"] < 1e-6
    assert results["capture"] == {}  # the capture check needs CUDA


def test_the_lock_cost_benchmark_times_each_lock_file_and_the_same_stages_in_one_file(tmp_path):
    def lock(names: list[str]) -> str:
        entries = "".join(f"  {n}:\n    cmd: echo {n}\n    deps:\n    - path: a\n      hash: md5\n      md5: 0\n"
                          f"      size: 1\n" for n in names)
        return f"schema: '2.0'\nstages:\n{entries}"

    (tmp_path / "pipelines/a").mkdir(parents=True)
    (tmp_path / "dvc.lock").write_text(lock(["aggregate"]))
    (tmp_path / "pipelines/a/dvc.lock").write_text(lock([f"train@{k}" for k in range(3)]))
    out = tmp_path / "lock.json"
    subprocess.run([sys.executable, str(REPO / "benchmarks/lock_cost.py"), str(tmp_path), "--repeat", "1",
                    "--out", str(out)], check=True, capture_output=True, text=True)
    result = json.loads(out.read_text())
    assert [(r["file"], r["stages"]) for r in result["files"]] == [("dvc.lock", 1), ("pipelines/a/dvc.lock", 3)]
    assert all(r["run_s"] == pytest.approx(r["rewrite_s"] * (r["stages"] + 1) / 2) for r in result["files"])
    assert result["one_file"]["stages"] == 4 and result["one_file"]["run_s"] > 0


def test_the_study_flops_count_every_study_of_the_full_profile(tmp_path):
    results = bench("study_flops.py", tmp_path, "--smoke")
    assert set(results["studies"]) == {"copy", "translation", "length", "lm"}
    length = results["studies"]["length"]
    # the full profile's 20 length tasks (ten problems, two architectures), 29 schemes (the θ axis, the seven layouts
    # and six of 2022-25), five seeds
    assert length["runs"] == 20 * 29 * 5
    # a duplicate row (question, separator, two copies) is longer than a reverse row: more FLOPs per step
    assert length["gflop_per_step"]["duplicate"] > length["gflop_per_step"]["reverse"] > 0
    for study in results["studies"].values():
        assert study["floor_min"] > 0 and study["h200_over_floor"] > 1
        assert study["with_tuning_floor_min"] == pytest.approx([1.4 * study["floor_min"], 2.2 * study["floor_min"]])
    assert results["floor_min"] == pytest.approx(sum(s["floor_min"] for s in results["studies"].values()))


def test_a_counted_step_is_linear_in_the_batch_and_at_least_six_flops_per_weight_per_token():
    """6·N·D (Kaplan et al. 2020): forward 2, backward 4 FLOPs per weight of a matrix product per token; attention
    and nothing else come on top."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_graphs import SMOKE, build
    from study_flops import step_flops

    size, rows = dict(SMOKE["lm"]), 16
    one = step_flops("lm", size, rows)
    assert step_flops("lm", {**size, "batch": 2 * size["batch"]}, rows) == 2 * one
    model = build("lm", "rope", size, 0)
    weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert 6 * weights * size["batch"] * rows <= one <= 1.5 * 6 * weights * size["batch"] * rows
