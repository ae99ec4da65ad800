#!/usr/bin/env bash
# The whole GPU check in one call: reference, calibration, speed of light, timer validation,
# every shipped submission through `harness eval`, the leaderboard, the GPU-only adversarial rows.
# Usage (through the device tool, carry [".whl"] for CuTe DSL): bash scripts/gpu_check.sh [STEP...]
# Steps: env reference calibrate sol timing eval contest leaderboard adversarial (default: all).
# The contest step runs the real contest files fetched into .contest/ (git-ignored; carry it).
# Everything lands in $OUT (default ./gpu-check-out): summary.txt and results.tar.gz.
# EVAL_FILES narrows the eval step (default: every file under submissions/); the leaderboard step
# ranks with the secret seed in $NVFP4_SECRET_SEED when set.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
WORK=$(mktemp -d)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:${PYTHONPATH:-}"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
  # The CuTe DSL wheel reaches its package through a .pth file, which PYTHONPATH entries ignore.
  [ -d /tmp/site/nvidia_cutlass_dsl/python_packages ] \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site/nvidia_cutlass_dsl/python_packages"
fi
steps=${*:-env reference calibrate sol timing eval contest leaderboard adversarial}
summary="$OUT/summary.txt"
: > "$summary"
log() { echo "$*" | tee -a "$summary"; }
run_step() {  # name, command...: log the command, its time and exit status; keep its output
  local name=$1; shift
  log "== $name: $* ($(date -u +%FT%TZ))"
  local start=$SECONDS
  "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  tail -n 60 "$WORK/$name.log" | tee -a "$summary"
  log "== $name: exit $rc after $((SECONDS - start)) s"
}

for step in $steps; do
  case $step in
    env) run_step env bash -c 'nvidia-smi; python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"' ;;
    reference) run_step reference python3 scripts/reference_check.py "$WORK/reference.json" ;;
    calibrate) run_step calibrate python3 -m harness calibrate --force ;;
    sol) run_step sol bash -c 'for p in nvfp4_gemv nvfp4_gemm nvfp4_dual_gemm nvfp4_group_gemm; do python3 -m harness sol $p; done' ;;
    timing) run_step timing python3 scripts/timing_validation.py "$WORK/timing_validation.json" ;;
    eval)
      mkdir -p "$WORK/eval"
      for file in ${EVAL_FILES:-submissions/*/*.py}; do
        name=$(basename "$(dirname "$file")")__$(basename "$file" .py)
        run_step "eval-$name" python3 -m harness eval "$file" --json "$WORK/eval/$name.json"
      done ;;
    contest) run_step contest python3 scripts/contest_verdicts.py .contest "$WORK/contest.json" ;;
    leaderboard) run_step leaderboard python3 -m harness leaderboard --db "$WORK/leaderboard.db" --out "$WORK/leaderboard" ;;
    adversarial) run_step adversarial python3 tests/adversarial/run_gpu.py "$WORK/adversarial.json" --cpu-rows none ;;
    *) log "unknown step $step" ;;
  esac
done
cp -r results "$WORK/" 2>/dev/null
tar -czf "$OUT/results.tar.gz" -C "$WORK" .
log "== done: $OUT/results.tar.gz"
