#!/usr/bin/env bash
# The leaderboard on 1 GPU (serial), on 2 GPUs (--cluster local), and over TCP on loopback with a
# scheduler and one worker per GPU started by the README's commands; wall times and per-case
# medians to $OUT/cluster_scaling.json, with the 2-GPU/1-GPU ratio and the median agreement.
#
# Usage (on a host with 2 identical GPUs): OUT=/tmp/out bash scripts/cluster_scaling.sh
# Without dask installed: carry the wheels in .whl-dask/ (README: Running on a cluster); they are
# installed into /tmp/site first. COPIES (default 2) copies of every shipped baseline of PROBLEMS
# (default all four) matching PATTERNS (default "triton_*.py cute_*.py"), each with its own
# comment line (so its own sha256), make the submissions.
set -euo pipefail
OUT=${OUT:-/tmp/cluster_scaling}
COPIES=${COPIES:-2}
PORT=${PORT:-8786}
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

run() {  # name, then the extra arguments of python -m harness leaderboard
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  python3 -m harness leaderboard --submissions "$WORK/submissions" --db "$OUT/$name.db" --out "$OUT/$name" \
    --force "$@" 2> "$OUT/$name.log"
  end=$(date +%s.%N)
  python3 -c "print(f'$name wall {$end - $start:.1f} s')" | tee -a "$OUT/walls.txt"
  echo "{\"$name\": $(python3 -c "print($end - $start)")}" > "$OUT/$name.wall.json"
}

CUDA_VISIBLE_DEVICES=0 run serial_1gpu
CUDA_VISIBLE_DEVICES=0,1 run local_2gpu --cluster local

# Two hosts, as README documents them, here on loopback: a scheduler and one worker per GPU.
DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1 python3 -m distributed.cli.dask_scheduler \
  --host 127.0.0.1 --port "$PORT" --no-dashboard > "$OUT/scheduler.log" 2>&1 &
PIDS=($!)
sleep 3
for gpu in 0 1; do
  CUDA_VISIBLE_DEVICES=$gpu python3 -m distributed.cli.dask_worker "tcp://127.0.0.1:$PORT" --nthreads 1 \
    --nworkers 1 --resources GPU=1 --name "loopback-gpu$gpu" --no-dashboard > "$OUT/worker$gpu.log" 2>&1 &
  PIDS+=($!)
done
sleep 8
run tcp_2gpu --cluster "tcp://127.0.0.1:$PORT" || true
for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done

python3 - "$OUT" <<'EOF'
"""Wall ratios and per-case median agreement against the 1-GPU run, from the three databases."""
import json
import sqlite3
import sys
from pathlib import Path

out = Path(sys.argv[1])


def medians(name):
    db = out / f"{name}.db"
    if not db.exists():
        return {}
    rows = sqlite3.connect(db).execute(
        "SELECT r.problem, r.submission_path, c.case_json, c.median_us FROM cases c JOIN runs r ON r.id = c.run_id "
        "WHERE c.kind = 'benchmark' AND c.median_us IS NOT NULL")
    return {f"{p}/{Path(s).name} {c}": m for p, s, c, m in rows}


walls = {}
for name in ("serial_1gpu", "local_2gpu", "tcp_2gpu"):
    path = out / f"{name}.wall.json"
    if path.exists():
        walls.update(json.loads(path.read_text()))
base = medians("serial_1gpu")
summary = {"walls_s": walls, "cases": len(base)}
for name in ("local_2gpu", "tcp_2gpu"):
    other = medians(name)
    shared = sorted(set(base) & set(other))
    deviations = [abs(other[k] / base[k] - 1) for k in shared]
    summary[name] = {
        "wall_ratio_vs_1gpu": walls.get(name, 0) / walls["serial_1gpu"] if name in walls else None,
        "cases_compared": len(shared),
        "max_median_deviation_pct": 100 * max(deviations) if deviations else None,
        "median_median_deviation_pct": 100 * sorted(deviations)[len(deviations) // 2] if deviations else None,
    }
summary["medians_us"] = {name: medians(name) for name in ("serial_1gpu", "local_2gpu", "tcp_2gpu")}
(out / "cluster_scaling.json").write_text(json.dumps(summary, indent=1))
print(json.dumps({k: v for k, v in summary.items() if k != "medians_us"}, indent=1))
EOF
