#!/usr/bin/env bash
# Issue 26 on a GPU (H100): profile mode under Nsight Compute, and a hang's stack. Everything
# lands in $OUT: summary.txt, each step's log, the JSON results and the .ncu-rep reports beside them.
#   bash scripts/profile_check.sh [STEP...]      (default: every step, about 5-8 minutes)
# Steps:
#   env   nvidia-smi, where ncu is and its version; builds the timing core if it is missing
#   gemv  profile mode of submissions/nvfp4_gemv/triton_gemv.py (--json $OUT/gemv.json, reports in $OUT/gemv.ncu/)
#   gemm  profile mode of submissions/nvfp4_gemm/triton_gemm.py (--json $OUT/gemm.json, reports in $OUT/gemm.ncu/)
#   csv   ncu's raw CSV of the first GEMV report, to compare with tests/data/ncu/gemv_raw.csv
#   hang  tests/adversarial/submissions/fault_hang_in_call.py timed out: exit 114, the reason names
#         fault_hang_in_call.py:7, --verbose prints every thread's stack
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/profile-check-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:${PYTHONPATH:-}" NVFP4_HISTORY_DB="$OUT/history.db"
source scripts/carried_wheels.sh
summary="$OUT/summary.txt" STEP_LOGS=$OUT TAIL=${TAIL:-60}
source scripts/step_log.sh
ncu_path() { command -v ncu || { [ -x /usr/local/cuda/bin/ncu ] && echo /usr/local/cuda/bin/ncu; }; }
env_step() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  echo "ncu: $(ncu_path || echo 'not found')"; "$(ncu_path)" --version 2>&1 | tail -n 2
  compgen -G "harness/worker/_sealed*.so" >/dev/null || python3 setup.py build_ext --inplace -q
  python3 -m harness --version
}
profile_step() {  # problem, file, name
  python3 -m harness eval "$1" "$2" --mode profile --json "$OUT/$3.json" --no-history
  local rc=$?
  ls -l "$OUT/$3.ncu" 2>&1
  python3 - "$OUT/$3.json" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
print("reports:", record.get("ncu_reports"), "| reason:", record.get("reason"))
for case in record["cases"]:
    for k in case.get("kernels") or []:
        print(case["case"], k["name"], f'{k["duration_us"]:.2f} us', f'DRAM {k["dram_pct"]:.1f}%',
              f'SM {k["sm_pct"]:.1f}%', f'occ {k["occupancy_pct"]:.1f}%', k["registers"], k["bound"])
PY
  return $rc
}
csv_step() {
  local report
  report=$(ls "$OUT"/gemv.ncu/*.ncu-rep | head -n 1)
  "$(ncu_path)" --import "$report" --csv --page raw --print-units base --metrics \
    gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
    | tee "$OUT/gemv_raw.csv"
}
hang_step() {
  python3 -m harness eval nvfp4_gemv tests/adversarial/submissions/fault_hang_in_call.py --mode test \
    --timeout-scale 0.25 --json "$OUT/hang.json" --verbose --no-history
  echo "exit $? (expected 114)"
}
for name in ${@:-env gemv gemm csv hang}; do
  case $name in
    env) run_step env env_step ;;
    gemv) run_step gemv profile_step nvfp4_gemv submissions/nvfp4_gemv/triton_gemv.py gemv ;;
    gemm) run_step gemm profile_step nvfp4_gemm submissions/nvfp4_gemm/triton_gemm.py gemm ;;
    csv) run_step csv csv_step ;;
    hang) run_step hang hang_step ;;
    *) log "unknown step $name" ;;
  esac
done
log "== done: $OUT"
