#!/usr/bin/env bash
# One device call for what landed on 2026-11-24/25 beside the timing work (issues 23, 26, 27).
#   bash scripts/session_check.sh [STEP...]    (default: every step; output in $OUT)
# Steps:
#   fp8          cuBLAS's times for fp8_blockwise_gemm, then the Triton blockwise GEMM ranked against them
#   profile      profile mode under Nsight Compute of the Triton GEMV and GEMM, and ncu's raw CSV
#   hang         a hanging submission timed out, with the default sandbox and without the uid drop:
#                the reason must name fault_hang_in_call.py:7
#   adversarial  the adversarial rows of the sealed timed window (s10, s11, p01*, o01, v07 evaluator)
#   honest       the Triton GEMV ranked (its medians against the ones before the session's changes)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/session-check-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:${PYTHONPATH:-}" NVFP4_HISTORY_DB="$OUT/history.db"
python3 setup.py build_ext --inplace -q > "$OUT/build.log" 2>&1 && echo "core built"
secret=$(mktemp) && python3 -c "import secrets; print(secrets.randbits(62))" > "$secret" && chmod 600 "$secret"
fp8() {
  python3 -m harness calibrate --vendor fp8_blockwise_gemm 2>&1 | grep -E "^vendor" | tee "$OUT/vendor.log"
  python3 -m harness eval submissions/fp8_blockwise_gemm/triton_blockwise_gemm.py --mode leaderboard \
    --secret-seed-file "$secret" --json "$OUT/fp8_triton.json" > "$OUT/fp8_triton.log" 2>&1
  echo "exit $?"; python3 scripts/run_summary.py "$OUT/fp8_triton.json"
  grep -E "% vendor|Geometric|Result" "$OUT/fp8_triton.log"
}
hang() {  # by default; without the uid drop; on the CPU of the same host (no CUDA threads)
  local name steps device
  for name in ${HANG_VARIANTS:-default no_uid cpu}; do
    steps=netns,uid,no_new_privs,not_dumpable,landlock; device=cuda
    [ "$name" = no_uid ] && steps=netns,no_new_privs,not_dumpable,landlock
    [ "$name" = cpu ] && device=cpu
    NVFP4_SANDBOX=$steps python3 -m harness eval nvfp4_gemv tests/adversarial/submissions/fault_hang_in_call.py \
      --mode test --device "$device" --timeout-scale 0.1 --verbose --no-history > "$OUT/hang_$name.log" 2>&1
    echo "hang $name: exit $?"; grep -E "TIMEOUT|it was at|File \"" "$OUT/hang_$name.log" | head -n 6
  done
}
adversarial() {
  local only
  for only in s10 s11 p01 o01 v07_read_secret_from_evaluator; do
    python3 tests/adversarial/run_gpu.py "$OUT/adversarial_$only.json" --only "$only" --cpu-rows cuda 2>&1 \
      | grep -E "^\[|KNOWN HOLE|MISMATCH" | tee -a "$OUT/adversarial.log"
  done
}
for step in ${*:-fp8 profile hang adversarial}; do
  echo "== $step ($(date -u +%T))"
  case $step in
    fp8) fp8 ;;
    profile) OUT="$OUT/profile" bash scripts/profile_check.sh gemv gemm csv 2>&1 | grep -vE "^ +(aten|cu|cuda|Activity)" | tail -n 70 ;;
    hang) hang ;;
    adversarial) adversarial ;;
    honest) python3 scripts/throughput.py "$OUT/honest" submissions/nvfp4_gemv/triton_gemv.py | tail -n 1 ;;
    *) echo "unknown step $step" ;;
  esac
done
echo "== done ($(date -u +%T))"
