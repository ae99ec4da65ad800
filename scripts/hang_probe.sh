#!/usr/bin/env bash
# Issue 34 on the GPU, one device call: does a hung CUDA worker's report name the author's line, and
# does the run end at the first stage limit? And if not, why (scripts/hang_probe.py's diagnostics).
#   bash scripts/hang_probe.sh         (everything under $OUT: summary.txt, each run's log and JSON; ~6 min)
# Hangs (tests/adversarial/submissions): fault_hang_spin_sync.py (a Triton kernel spinning on a flag,
# the host in torch.cuda.synchronize), fault_hang_spin_kernel.py (the same kernel, custom_kernel
# returns: the harness's own wait hangs), fault_hang_in_call.py (a host-only wait). Each runs as a
# contestant types it, `eval ... --device cuda --timeout-scale 0.1` (test limit 12 s), with the default
# sandbox (uid drop when root) and without the uid drop; the host-only hang also on the CPU.
# Per run: exit code (114 expected), seconds (one limit plus worker start, not two limits), and whether
# the report names the line marked in the file. Then the diagnostics, one JSON line each:
#   signals   does CUDA / Triton / the compiled core keep faulthandler's SIGUSR1 handler, and does a
#             signal sent to the process or to each thread (CUDA's own among them) write a dump?
#   route     (HANG_ROUTES=0 leaves it out) each route alone (watchdog; SIGUSR1 via the reaper; SIGUSR1 straight to the worker) on
#             the spinning and the host-only hang, and /proc's view of the worker's threads.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/hang-probe-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:${PYTHONPATH:-}" NVFP4_HISTORY_DB="$OUT/history.db"
summary="$OUT/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
compgen -G "harness/worker/_sealed*.so" >/dev/null || python3 setup.py build_ext --inplace -q > "$OUT/build.log" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$summary"
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" \
  2>&1 | tee -a "$summary"
SUBS=tests/adversarial/submissions
WITH_UID=netns,uid,no_new_privs,not_dumpable,landlock   # the default steps
NO_UID=netns,no_new_privs,not_dumpable,landlock
marked_line() {  # the line a report should name: the marked one, or line 7 of the host-only hang
  grep -n "HANGS HERE\|LAUNCH" "$1" | cut -d: -f1 | head -n 1 | grep . || echo 7
}
cli_run() {  # name, file, device, sandbox steps
  local name=$1 file=$2 device=$3 steps=$4 start rc seconds line named
  start=$(date +%s.%N)
  NVFP4_SANDBOX=$steps timeout 300 python3 -m harness eval nvfp4_gemv "$file" --mode test --device "$device" \
    --timeout-scale 0.1 --verbose --no-history --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  rc=$?
  seconds=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
  line="$(basename "$file"):$(marked_line "$file")"
  named=$(grep -q "it was at $line" "$OUT/$name.log" && echo "yes" || echo "NO")
  say "$name: exit $rc, ${seconds} s, names $line: $named | $(grep -m1 -o 'took longer than.*' "$OUT/$name.log" | cut -c1-160)"
}
say "== contestant's command line (expected: exit 114, one 12 s limit + start, the marked line named)"
for file in ${HANG_FILES:-fault_hang_spin_sync fault_hang_spin_kernel fault_hang_in_call}; do
  cli_run "${file}_uid" "$SUBS/$file.py" cuda "$WITH_UID"
  cli_run "${file}_no_uid" "$SUBS/$file.py" cuda "$NO_UID"
done
cli_run fault_hang_in_call_cpu "$SUBS/fault_hang_in_call.py" cpu "$WITH_UID"
say "== diagnostics: faulthandler's SIGUSR1 handler in one process, step by step"
timeout 120 python3 scripts/hang_probe.py signals 2>&1 | tee "$OUT/signals.jsonl" | tee -a "$summary"
[ "${HANG_ROUTES:-1}" = 1 ] || { say "== done (HANG_ROUTES=0: routes not tried)"; exit 0; }
say "== diagnostics: each route alone (0.05 x the limits)"
for file in fault_hang_spin_sync fault_hang_in_call; do
  for route in watchdog signal direct; do
    NVFP4_SANDBOX=$WITH_UID timeout 200 python3 scripts/hang_probe.py route "$route" "$SUBS/$file.py" --scale 0.05 \
      2>> "$OUT/routes.err" | tee -a "$OUT/routes.jsonl" | tee -a "$summary"
  done
done
for route in signal direct; do
  NVFP4_SANDBOX=$NO_UID timeout 200 python3 scripts/hang_probe.py route "$route" "$SUBS/fault_hang_in_call.py" \
    --scale 0.05 2>> "$OUT/routes.err" | tee -a "$OUT/routes.jsonl" | tee -a "$summary"
done
say "== done"
