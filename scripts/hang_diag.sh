#!/usr/bin/env bash
# Why a hung CUDA worker's stacks do not reach the report (issue 34): the worker seen from outside.
# Runs the Python hang (tests/adversarial/submissions/fault_hang_in_call.py) on DEVICE in the
# background; once the worker hangs, prints every thread's name and signal masks (SigBlk, SigCgt:
# is SIGUSR1, bit 10, blocked or caught?), sends SIGUSR1 itself and shows what the worker's stack
# file then holds (read through /proc/<pid>/fd, since the file is unlinked); then lets the run end
# and prints its exit code, elapsed seconds and reason lines.   bash scripts/hang_diag.sh [cuda|cpu]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/hang-diag-out}; mkdir -p "$OUT"
device=${1:-cuda}
export PYTHONPATH="$PWD:${PYTHONPATH:-}" NVFP4_HISTORY_DB="$OUT/history.db"
start=$(date +%s.%N)
python3 -m harness eval nvfp4_gemv tests/adversarial/submissions/fault_hang_in_call.py --mode test \
  --device "$device" --timeout-scale 0.1 --verbose --no-history > "$OUT/hang_diag_$device.log" 2>&1 &
eval_pid=$!
worker=""
for _ in $(seq 1 60); do
  sleep 0.5
  reaper=$(pgrep -n -f "harness.judge.worker_link.worker_reaper")
  worker=$( [ -n "$reaper" ] && pgrep -P "$reaper" | head -n 1)  # the reaper's child: the worker
  [ -n "$worker" ] && break
done
sleep "${DIAG_WAIT_S:-7}"  # past the import: inside the hanging call
echo "== worker pid ${worker:-none} (device $device)"
if [ -n "$worker" ]; then
  ps -o pid,ppid,uid,stat,comm,args -p "$(pgrep -d, -f 'harness|serve_loop|reaper')" 2>/dev/null | cut -c1-160
  for task in /proc/"$worker"/task/*; do
    printf '%s %-16s %s %s %s wchan=%s\n' "$(basename "$task")" "$(cat "$task"/comm)" \
      "$(grep SigBlk "$task"/status)" "$(grep SigCgt "$task"/status)" "$(grep '^State' "$task"/status)" \
      "$(cat "$task"/wchan 2>/dev/null)"
  done
  grep -E "SigIgn|SigCgt|Seccomp" /proc/"$worker"/status
  ls -l /proc/"$worker"/fd 2>/dev/null | tail -n +2 | awk '{print $9, $10, $11}' > "$OUT/fds_before.txt"
  echo "-- SIGUSR1 sent by this script"; kill -USR1 "$worker"; sleep 1.5
  for fd in /proc/"$worker"/fd/*; do
    target=$(readlink "$fd")
    case $target in *deleted*) echo "fd $(basename "$fd") -> $target: $(wc -c < "$fd") bytes"; head -c 1500 "$fd";;
    esac
  done
  echo "-- py stack via /proc/$worker/stack (kernel) of the main thread:"; head -n 12 /proc/"$worker"/stack 2>/dev/null
fi
wait "$eval_pid"; code=$?
echo "== eval exit $code after $(echo "$(date +%s.%N) - $start" | bc) s"
grep -E "TIMEOUT|timeout|it was at|killed|File \"|reason" "$OUT/hang_diag_$device.log" | head -n 20
