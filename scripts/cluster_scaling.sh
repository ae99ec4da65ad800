#!/usr/bin/env bash
# The leaderboard on 1 GPU (serial), on 2 GPUs (--cluster local), and over TCP on loopback with a
# scheduler and one worker per GPU started by the README's commands; wall times, per-case medians
# and where each run's time went to $OUT/cluster_scaling.json, with the 2-GPU/1-GPU ratio and the
# median agreement.
#
# Usage (on a host with 2 identical GPUs): OUT=/tmp/out bash scripts/cluster_scaling.sh
# Without dask installed: carry the wheels in .whl-cluster/ (scripts/two_gpu_check.sh says how);
# they are installed into /tmp/site first. COPIES (default 2) copies of every shipped baseline of
# PROBLEMS (default all four) matching PATTERNS (default "triton_*.py cute_*.py"), each with its own
# comment line (so its own sha256), make the submissions. DEVICE=cpu runs the same on CPU workers
# (a dry run of the script's logic). GPU_CHECK (default none: the runs measure scaling alone) is
# passed as --gpu-check. GPU1_BUSY_FILE: while that file exists, the 2-GPU runs wait (another job
# uses GPU 1 beside the serial run; scripts/two_gpu_check.sh). AFTER_RUN: a command run after each run.
#
# Where the time goes (issue 35: --cluster local took 116.2 s against the TCP cluster's 93.5 s on
# two H100s): every stderr line is stamped as it arrives, and scripts/cluster_timeline.py turns each
# run's log into its cluster start, the gap before the first job, each worker's jobs, busy and last
# end (one worker given more work shows there), a job run twice (a restarted worker), the tail, and
# the time after the last result (closing the cluster, writing the pages). tcp_workers_start_s is
# what the TCP run did before its clock started (its workers' start), which --cluster local does
# inside its wall.
set -euo pipefail
OUT=${OUT:-/tmp/cluster_scaling}
COPIES=${COPIES:-2}
PORT=${PORT:-8786}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import distributed" 2>/dev/null || source scripts/carried_wheels.sh
export NVFP4_SECRET_SEED=${NVFP4_SECRET_SEED:-20261123}

WORK=$(mktemp -d)
for problem in ${PROBLEMS:-nvfp4_gemv nvfp4_gemm nvfp4_dual_gemm nvfp4_group_gemm}; do
  mkdir -p "$WORK/submissions/$problem"
  for pattern in ${PATTERNS:-triton_*.py cute_*.py}; do for file in submissions/$problem/$pattern; do
    [ -e "$file" ] || continue
    for copy in $(seq 1 "$COPIES"); do
      { cat "$file"; echo "# copy $copy for the scaling run"; } > "$WORK/submissions/$problem/$(basename "$file" .py)_$copy.py"
    done
  done; done
done
echo "$(find "$WORK/submissions" -name '*.py' | wc -l) submissions in $WORK/submissions"

stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }
run() {  # name, then the extra arguments of python -m harness leaderboard
  local name=$1; shift
  local start end rc
  start=$EPOCHREALTIME
  set +e
  python3 -m harness leaderboard --submissions "$WORK/submissions" --db "$OUT/$name.db" --out "$OUT/$name" \
    --device "$DEVICE" --gpu-check "${GPU_CHECK:-none}" --force "$@" 2>&1 >/dev/null | stamp > "$OUT/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  end=$EPOCHREALTIME
  python3 -c "print(f'$name wall {$end - $start:.1f} s, exit $rc')" | tee -a "$OUT/walls.txt"
  echo "{\"$name\": $(python3 -c "print($end - $start)")}" > "$OUT/$name.wall.json"
  python3 scripts/cluster_timeline.py "$OUT/$name.log" "$start" "$end" > "$OUT/$name.timeline.json"
  ${AFTER_RUN:-true}  # a command run after each run (two_gpu_check.sh packs its results: a call cut short keeps them)
}
wait_for_gpu1() { while [ -n "${GPU1_BUSY_FILE:-}" ] && [ -e "$GPU1_BUSY_FILE" ]; do sleep 1; done; }

CUDA_VISIBLE_DEVICES=0 run serial_1gpu
wait_for_gpu1
CUDA_VISIBLE_DEVICES=0,1 run local_2gpu --cluster local

# Two hosts, as README documents them, here on loopback: a scheduler and one worker per GPU.
DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1 python3 -m distributed.cli.dask_scheduler \
  --host 127.0.0.1 --port "$PORT" --no-dashboard > "$OUT/scheduler.log" 2>&1 &
PIDS=($!)
trap 'for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
workers_start=$EPOCHREALTIME
for gpu in 0 1; do
  CUDA_VISIBLE_DEVICES=$gpu python3 -m distributed.cli.dask_worker "tcp://127.0.0.1:$PORT" --nthreads 1 \
    --nworkers 1 --resources GPU=1 --name "loopback-gpu$gpu" --no-dashboard \
    --preload harness.execution.dask_worker_setup > "$OUT/worker$gpu.log" 2>&1 &
  PIDS+=($!)
done
python3 -c "
from distributed import Client
with Client('tcp://127.0.0.1:$PORT', timeout=60) as client:
    client.wait_for_workers(2, timeout=120)"
python3 -c "print($EPOCHREALTIME - $workers_start)" > "$OUT/tcp_workers_start_s.txt"
run tcp_2gpu --cluster "tcp://127.0.0.1:$PORT" || true

python3 - "$OUT" <<'EOF'
"""Wall ratios, per-case median agreement against the 1-GPU run and the timelines, from the runs."""
import json
import sqlite3
import sys
from pathlib import Path

out = Path(sys.argv[1])
RUNS = ("serial_1gpu", "local_2gpu", "tcp_2gpu")


def medians(name):
    db = out / f"{name}.db"
    if not db.exists():
        return {}
    rows = sqlite3.connect(db).execute(
        "SELECT r.problem, r.submission_path, c.case_json, c.median_us FROM cases c JOIN runs r ON r.id = c.run_id "
        "WHERE c.kind = 'benchmark' AND c.median_us IS NOT NULL")
    return {f"{p}/{Path(s).name} {c}": m for p, s, c, m in rows}


def loaded(path):
    return json.loads(path.read_text()) if path.exists() else None


walls = {}
for name in RUNS:
    walls.update(loaded(out / f"{name}.wall.json") or {})
base = medians("serial_1gpu")
tcp_start = out / "tcp_workers_start_s.txt"
summary = {"walls_s": walls, "cases": len(base),
           "tcp_workers_start_s": float(tcp_start.read_text()) if tcp_start.exists() else None}
for name in ("local_2gpu", "tcp_2gpu"):
    other = medians(name)
    shared = sorted(set(base) & set(other))
    deviations = [abs(other[k] / base[k] - 1) for k in shared]
    summary[name] = {
        "wall_ratio_vs_1gpu": walls.get(name, 0) / walls["serial_1gpu"] if name in walls and walls.get("serial_1gpu") else None,
        "cases_compared": len(shared),
        "max_median_deviation_pct": 100 * max(deviations) if deviations else None,
        "median_median_deviation_pct": 100 * sorted(deviations)[len(deviations) // 2] if deviations else None,
    }
summary["timelines"] = {name: loaded(out / f"{name}.timeline.json") for name in RUNS}
summary["medians_us"] = {name: medians(name) for name in RUNS}
(out / "cluster_scaling.json").write_text(json.dumps(summary, indent=1))
print(json.dumps({k: v for k, v in summary.items() if k != "medians_us"}, indent=1))
EOF
