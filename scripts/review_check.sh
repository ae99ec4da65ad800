#!/usr/bin/env bash
# Issue 39 on a GPU (H100): `harness review` over a leaderboard of the shipped NVFP4 Triton baselines plus
# the adversarial suite's GPU cheats that pass a plain ranked run (tests/adversarial/verdicts.yml rows whose
# status is `passed` and that attack: the honest twin and the reference caller are left out), and the planted
# kernelguard misses that can run. Must show: every cheat on the board flagged (with the reason), no baseline.
# Everything lands in $OUT: summary.txt, each step's log, the database, each step's review JSON and the pages.
#   bash scripts/review_check.sh [STEP...]      (default: every step in this order)
# Steps (sized for the device tool's 10 minutes, not yet timed: lower TOP / SANITIZE_TOP if one runs over; the
# state between calls is kept under results/review-check/, git-ignored, so later steps may run in later calls on
# the same warm machine):
#   env        nvidia-smi, ncu and compute-sanitizer, torch; builds the timing core if it is missing
#   baselines  harness leaderboard over the four Triton baselines and the GEMV's torch reference
#   cheats     harness leaderboard over the cheats (nvfp4_gemv), into the same database
#   static     harness review, static read and physics floor only, every problem (--top $TOP)
#   rerun      harness review --problem nvfp4_gemv: a fresh ranked run per entry (new secret seed)
#   clock      harness review --problem nvfp4_gemv: Nsight Compute's kernel time beside the harness's
#   sanitize   harness review --problem nvfp4_gemv --top $SANITIZE_TOP: sanitize mode on the test shapes
#   summary    the steps' verdicts merged per entry (scripts/review_summary.py); exit 1 if a cheat on the
#              board went unflagged or a baseline was flagged
# Environment: REVIEW_DEVICE (cuda; cpu: a dry run of the plumbing, nothing is ranked so nothing is
# reviewed), TOP (20), SANITIZE_TOP (4), BASELINES / CHEATS / PLANTED (file names, defaults below).
# Carried wheels: as gpu_check.sh, and .whl-review (kernelguard) when present; without it our rules run alone.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/review-check-out}
STATE=${REVIEW_STATE:-$PWD/results/review-check}
DEVICE=${REVIEW_DEVICE:-cuda}
TOP=${TOP:-20}
SANITIZE_TOP=${SANITIZE_TOP:-4}
ADVERSARIAL=tests/adversarial/submissions
PLANTED_DIR=tests/review/planted
CHEATS=${CHEATS:-"v07_read_secret.py v07_read_secret_from_evaluator.py v11_persisting_l2.py s08_rebind_core.py p01c_open_inaccessible_pages.py p02_precompute_at_draw.py o01_setsid_orphan.py"}
PLANTED=${PLANTED:-"side_stream_in_sleep.py pointer_cache.py native_detour.py"}
BASELINES=${BASELINES:-"nvfp4_gemv/triton_gemv.py nvfp4_gemv/torch_reference.py nvfp4_gemm/triton_gemm.py nvfp4_dual_gemm/triton_dual_gemm.py nvfp4_group_gemm/triton_group_gemm.py"}
mkdir -p "$OUT" "$STATE"
# The cheats' helpers (_honest, _reach, _keyscan, _detour_native) are found where the worker looks: PYTHONPATH.
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:$PWD/$ADVERSARIAL:$PWD/$PLANTED_DIR:${PYTHONPATH:-}" NVFP4_HISTORY_DB="$STATE/history.db"
source scripts/carried_wheels.sh
if compgen -G ".whl-review/*.whl" >/dev/null; then  # kernelguard, carried (a machine without a registry)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site-review \
    .whl-review/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site-review"
fi
summary="$OUT/summary.txt" STEP_LOGS=$OUT TAIL=${TAIL:-60}
AFTER_STEP=keep_state
keep_state() { cp -f "$STATE"/lb.db "$STATE"/review-*.json "$OUT"/ 2>/dev/null; cp -rf "$STATE/site" "$OUT"/ 2>/dev/null; true; }
source scripts/step_log.sh
REVIEW=(python3 -m harness review --db "$STATE/lb.db" --out "$STATE/site" --device "$DEVICE" --top "$TOP"
        --import-path "$ADVERSARIAL" --import-path "$PLANTED_DIR")

env_step() {
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  echo "ncu: $(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo 'not found')"
  echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo 'not found')"
  python3 -c "import kernelguard; print('kernelguard', kernelguard.__file__)" || echo "kernelguard: not installed (our rules only)"
  compgen -G "harness/worker/_sealed*.so" >/dev/null || python3 setup.py build_ext --inplace -q
  python3 -m harness --version
}
secret_file() {  # the organizer's secret for the board's ranked runs (review draws its own)
  [ -s "$STATE/secret" ] || { python3 -c "import secrets; print(secrets.randbits(62))" > "$STATE/secret"; }
  chmod 600 "$STATE/secret"; echo "$STATE/secret"
}
copy_in() {  # source, problem, board folder: a copy there, its own author (one entry per file)
  local folder="$3/$2"
  mkdir -p "$folder"
  { echo "#!POPCORN author $(basename "$1" .py)"; cat "$1"; } > "$folder/$(basename "$1")"
  chmod -R a+rX "$3"
}
leaderboard_over() {  # folder of <problem>/*.py files
  python3 -m harness leaderboard --db "$STATE/lb.db" --out "$STATE/site" --submissions "$1" --device "$DEVICE" \
    --secret-seed-file "$(secret_file)"
}
baselines_step() {  # its own folder: the review reads every entry's file where the board ran it
  rm -rf "$STATE/submissions"
  for file in $BASELINES; do copy_in "submissions/$file" "$(dirname "$file")" "$STATE/submissions"; done
  leaderboard_over "$STATE/submissions"
}
cheats_step() {
  rm -rf "$STATE/cheats"
  for file in $CHEATS; do copy_in "$ADVERSARIAL/$file" nvfp4_gemv "$STATE/cheats"; done
  for file in $PLANTED; do copy_in "$PLANTED_DIR/$file" nvfp4_gemv "$STATE/cheats"; done
  leaderboard_over "$STATE/cheats"
}
review_step() {  # name, review options...
  local name=$1; shift
  "${REVIEW[@]}" --json "$STATE/review-$name.json" "$@"
}
summary_step() {
  local baselines cheats
  baselines=$(for file in $BASELINES; do basename "$file"; done | paste -sd, -)
  cheats=$(echo $CHEATS $PLANTED | tr ' ' ',')
  python3 scripts/review_summary.py "$STATE"/review-*.json --baselines "$baselines" --cheats "$cheats"
}
for name in ${@:-env baselines cheats static rerun clock sanitize summary}; do
  case $name in
    env) run_step env env_step ;;
    baselines) run_step baselines baselines_step ;;
    cheats) run_step cheats cheats_step ;;
    static) run_step static review_step static --skip rerun,clock,sanitize ;;
    rerun) run_step rerun review_step rerun --problem nvfp4_gemv --skip clock,sanitize ;;
    clock) run_step clock review_step clock --problem nvfp4_gemv --skip rerun,sanitize ;;
    sanitize) run_step sanitize review_step sanitize --problem nvfp4_gemv --skip rerun,clock --top "$SANITIZE_TOP" ;;
    summary) run_step summary summary_step ;;
    *) log "unknown step $name" ;;
  esac
done
log "== done: $OUT"
