#!/usr/bin/env bash
# THERE, on a device machine, in the repository root (the device tool's `run`, with carry: [".whl"] from
# benchmarks/gpu/wheels.sh): install the carried wheels, then start `dvc repro` of the study detached, so that
# it survives between the tool's calls (10 minutes each), and sample the GPU every 5 s. Returns at once;
# `bash benchmarks/gpu/collect.sh` (a later call) says how far it is and packs the results into $OUT.
#
#   bash benchmarks/gpu/start.sh [pelab compose overrides...]   # none: params.yaml as committed (profile full)
#
# Everything lands in /tmp/pelab-gpu/: repro.log (each line prefixed with its Unix time), rc (dvc's exit status,
# once it ends), gpu.csv (time, utilisation %, memory MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
LOG=/tmp/pelab-gpu
mkdir -p "$LOG"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH="/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PATH="/tmp/site/bin:$PATH" TQDM_DISABLE=1
if [ "$#" -gt 0 ]; then
  python3 -m pelab.cli compose "$@" --out params.yaml
fi
if [ ! -d .git ]; then  # the device's copy of the tree has no .git: DVC without git (no experiments, plain repro)
  [ -d .dvc ] || python3 -m dvc init -q --no-scm
  python3 -m dvc config --local core.no_scm true
fi
rm -f "$LOG/rc"
setsid nohup bash -c "python3 -m dvc repro 2>&1 | while IFS= read -r line; do printf '%s %s\n' \"\$(date +%s)\" \"\$line\"; done > $LOG/repro.log; echo \${PIPESTATUS[0]} > $LOG/rc" >/dev/null 2>&1 &
if command -v nvidia-smi >/dev/null; then
  setsid nohup nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -l 5 \
    > "$LOG/gpu.csv" 2>/dev/null &
fi
echo "started dvc repro at $(date -u +%H:%M:%S); logs in $LOG"
