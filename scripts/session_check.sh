#!/usr/bin/env bash
# One device call for what landed on 2026-11-24 beside the timing work (issues 23, 26, 27): the
# blockwise fp8 Triton GEMM ranked against cuBLAS, profile mode under Nsight Compute and a hang's
# stack (scripts/profile_check.sh), and the adversarial rows of the sealed timed window. Output in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/session-check-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:${PYTHONPATH:-}" NVFP4_HISTORY_DB="$OUT/history.db"
python3 setup.py build_ext --inplace -q > "$OUT/build.log" 2>&1 && echo "core built"
secret=$(mktemp) && python3 -c "import secrets; print(secrets.randbits(62))" > "$secret" && chmod 600 "$secret"
echo "== fp8: vendor, then the Triton blockwise GEMM ranked ($(date -u +%T))"
python3 -m harness calibrate --vendor fp8_blockwise_gemm 2>&1 | grep -E "^vendor" | tee "$OUT/vendor.log"
python3 -m harness eval submissions/fp8_blockwise_gemm/triton_blockwise_gemm.py --mode leaderboard \
  --secret-seed-file "$secret" --json "$OUT/fp8_triton.json" > "$OUT/fp8_triton.log" 2>&1
echo "exit $?"; python3 scripts/run_summary.py "$OUT/fp8_triton.json"; grep -E "% vendor|Geometric" "$OUT/fp8_triton.log"
echo "== profile and hang ($(date -u +%T))"
OUT="$OUT/profile" bash scripts/profile_check.sh env gemv gemm csv hang 2>&1 | tail -n 60
echo "== adversarial rows of the timed window ($(date -u +%T))"
for only in s10 s11 p01 o01 v07_read_secret_from_evaluator; do
  python3 tests/adversarial/run_gpu.py "$OUT/adversarial_$only.json" --only "$only" --cpu-rows cuda 2>&1 \
    | grep -E "^\[|KNOWN HOLE|MISMATCH" | tee -a "$OUT/adversarial.log"
done
echo "== done ($(date -u +%T))"
