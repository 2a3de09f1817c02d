#!/usr/bin/env bash
# THERE, after benchmarks/gpu/start.sh: how far `dvc repro` is, and (into $OUT, when the device tool sets it) the
# results: report.md, summary.json, the metrics and figures as archives, the GPU samples, the log and
# stage_times.json (seconds per stage, from the log's timestamps, and the whole wall time).
set -euo pipefail
cd "$(dirname "$0")/../.."
LOG=/tmp/pelab-gpu
python3 - "$LOG" <<'PY'
import json
import sys
from pathlib import Path

log = Path(sys.argv[1])
lines = [line.split(" ", 1) for line in (log / "repro.log").read_text().splitlines() if " " in line]
starts = [(int(t), text.split("'")[1]) for t, text in lines if text.startswith("Running stage '")]
end = int(lines[-1][0]) if lines else 0
times = {name: (starts[i + 1][0] if i + 1 < len(starts) else end) - t for i, (t, name) in enumerate(starts)}
rc = (log / "rc").read_text().strip() if (log / "rc").exists() else None
summary = {"stages_run": len(starts), "wall_s": end - int(lines[0][0]) if lines else 0, "exit": rc,
           "slowest": sorted(times.items(), key=lambda kv: -kv[1])[:10], "stage_s": times}
(log / "stage_times.json").write_text(json.dumps(summary, indent=1))
state = "running" if rc is None else f"finished, exit {rc}"
print(f"dvc repro {state}: {len(starts)} stages started, {summary['wall_s']} s so far; last: "
      f"{starts[-1][1] if starts else '-'}")
PY
if [ -n "${OUT:-}" ]; then
  cp "$LOG/repro.log" "$LOG/stage_times.json" "$OUT/"
  [ -f "$LOG/gpu.csv" ] && cp "$LOG/gpu.csv" "$OUT/"
  if [ -f reports/report.md ]; then
    cp reports/report.md reports/summary.json reports/study.json params.yaml "$OUT/"
    tar -czf "$OUT/figures.tar.gz" reports/figures
    tar -czf "$OUT/metrics.tar.gz" reports/metrics reports/plots dvc.lock
  fi
fi
