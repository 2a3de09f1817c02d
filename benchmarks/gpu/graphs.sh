#!/usr/bin/env bash
# THERE, on a device machine (the device tool's `run`), in the repository root: the CUDA-graph step against the
# eager step at the full profile's sizes (benchmarks/bench_graphs.py), within one call. Needs nothing beyond the
# image (torch, click, pyyaml, tqdm, sacrebleu, tokenizers). Writes graphs_full.json and graphs.log into $OUT.
#
#   bash benchmarks/gpu/graphs.sh [bench_graphs.py options...]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/pelab-graphs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TQDM_DISABLE=1 PYTHONPATH="$PWD/src:$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__)" | tee -a "$OUT/gpu.txt"
python3 benchmarks/bench_graphs.py --out "$OUT/graphs_full.json" "$@" 2>&1 | tee "$OUT/graphs.log"
