#!/usr/bin/env bash
# THERE, on a device machine: K training processes of the length study side by side on one GPU, graphed and
# eager, each five seeds stacked (benchmarks/bench_graphs.py, one mode each), against one alone: how much of the
# GPU one stage leaves to the others. Each process gets cores/K threads. Logs into $OUT/parallel_<mode>_<k>.log.
#
#   bash benchmarks/gpu/parallel_graphs.sh [K] [study]
set -uo pipefail
cd "$(dirname "$0")/.."
K=${1:-3}; STUDY=${2:-length}
OUT=${OUT:-/tmp/pelab-graphs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TQDM_DISABLE=1 PYTHONPATH="$PWD/../src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS=$(( $(nproc) / K ))
for mode in graphs eager; do
  for i in $(seq 1 "$K"); do
    python3 bench_graphs.py --studies "$STUDY" --modes "$mode" --no-capture-check > "$OUT/parallel_${mode}_$i.log" 2>&1 &
  done
  wait
  echo "$K x $STUDY $mode side by side:"; grep -h "ms/step" "$OUT"/parallel_"${mode}"_*.log
done
