#!/usr/bin/env bash
# Issue 35 on a host with two identical GPUs, in one device call (about 9 minutes at the default
# sizes): the eight-file leaderboard on one GPU, on two through --cluster local and through a TCP
# scheduler, a Dask worker killed mid-run, and the submission service under load with a kill and
# restart mid-queue, on one GPU and on two. Prints a table (wall, speed-up, the medians' largest
# difference from the 1-GPU run, entries ranked once / lost / doubled, where the time went, the
# per-GPU check, the service's answered-once count and throughput, each leaderboard run's phases
# summed over its jobs) and writes it to $OUT/two_gpu.md. Every log, database, page and timeline goes
# into $OUT/results-<first step>.tar.gz, packed again after each step and each leaderboard run (a
# call cut short keeps what ran), since the device tool brings back only a few dozen files; beside
# it in $OUT only the small summaries: steps.txt, walls.txt, cluster_scaling.json, two_gpu.md and
# two_gpu.json. Read it with
# `tar -xzf results-build.tar.gz -C somewhere` (two_gpu_report.py runs on the unpacked folder too).
#
# Prepare here, once (the device has no package registry; 5.3 MB and 3.7 MB, measured 2026-11-26):
#   for set in "cluster dask distributed" "service fastapi uvicorn python-multipart jinja2"; do
#     python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#       -d ".whl-${set%% *}" ${set#* }
#   done
# Run: device tool, kind nvidia-h100-x2, carry [".whl-cluster", ".whl-service"],
#   command: OUT=$OUT bash scripts/two_gpu_check.sh                 (the default steps, about 9 min)
#   then one call each (under 9 min):  OUT=$OUT STEPS="build host_share" bash scripts/two_gpu_check.sh
#                                      OUT=$OUT STEPS="build service_issue table" bash scripts/two_gpu_check.sh
#                                      OUT=$OUT STEPS="build scheduler table" bash scripts/two_gpu_check.sh
# (the scheduler and host_share steps fit together in one call: about 6.5 min)
# Issue 35's speed-ups with each run's phases summed over its jobs, under 8 min on two H100s:
#   command: OUT=$OUT STEPS="build leaderboard table" bash scripts/two_gpu_check.sh   (about 6 min)
#
# Steps (STEPS, default "build leaderboard kill service_1gpu service_2gpu table", in that order):
#   build        the sealed timing core, in place (ranked runs need it; 3 s)
#   leaderboard  scripts/cluster_scaling.sh: COPIES (2) copies of every problem's Triton baseline,
#                serially on GPU 0, then --cluster local on both, then a TCP scheduler with one
#                worker per GPU (about 6.5 min); service_1gpu runs on GPU 1 beside the serial run
#   kill         KILL_COPIES (3) copies of the Triton GEMV on --cluster local, --gpu-check on the
#                first (its copies run first); then the first Dask worker KILL_AFTER_S (5) s into a
#                new evaluation is SIGKILLed (about 1 min)
#   service_1gpu SERVICE_ONE_GPU_SUBMISSIONS (6) from SERVICE_USERS (6) through harness submit to
#                harness serve --cluster local on GPU 1 alone (test mode of SERVICE_FILE, about 8 s a
#                job on an H100)
#   service_2gpu SERVICE_SUBMISSIONS (12) from SERVICE_USERS on both GPUs; the service SIGKILLed and
#                restarted once a quarter of them are answered (about 1.5 min)
#   service_issue the issue's service test in one call (about 9 min): ISSUE_SUBMISSIONS (100) from
#                ISSUE_USERS (10) at once on both GPUs, killed and restarted once a quarter are answered,
#                then ISSUE_ONE_GPU (24) of the same work on GPU 1 alone until ISSUE_DEADLINE_S (540)
#                from the step's start (the queue's rate stands on what was answered by then). The work
#                is the cheapest that runs the whole path on the GPU: test mode of ISSUE_FILE, the GEMV's
#                torch reference (no JIT compile). Its table rows are service_2gpu's and service_1gpu's.
#   host_share   scripts/host_share_probe.py: why each evaluation runs about 11% slower when two share
#                the host (run 13): HOST_SHARE_FILE (the Triton GEMM) ranked alone, two at once sized
#                for the whole host, two at once sized to their half (the fix), two pinned to their
#                half; the CPU time and threads of each process, the per-call phases, host memory
#                bandwidth and PCIe alone against two at once (HOST_SHARE_ROUNDS (2): about 4.5 min)
#   scheduler    SCHEDULER_COPIES (4) copies of SCHEDULER_FILE (the Triton GEMV) ranked through a TCP
#                scheduler with one supervised worker per GPU; the scheduler SIGKILLed
#                SCHEDULER_KILL_AFTER_S (5) s after both workers started a job and started again on its
#                port (scripts/scheduler_restart.py, about 2 min)
#   table        scripts/two_gpu_report.py
# Each step stands alone after build (one device call each, under 9 minutes), so the integrator can
# split the script across calls: STEPS="build service_issue table", STEPS="build host_share", ...
# DEVICE=cpu runs the same logic at a tiny size on CPU workers (no GPU needed: how the script is
# checked). There the 1-worker service uses the service's own serial executor, since a CPU local
# cluster has one worker per core.
set -uo pipefail
cd "$(dirname "$0")/.."
RESULTS=${OUT:-$PWD/two-gpu-out}  # what comes back: the tarball and the summaries
DEVICE=${DEVICE:-cuda}
STEPS=${STEPS:-build leaderboard kill service_1gpu service_2gpu table}
WORK=$(mktemp -d)
OUT=$WORK/out  # every step's files, packed into the tarball
mkdir -p "$OUT" "$RESULTS"
export PACK_DIR=$OUT RESULTS PACK_NAME="results-${STEPS%% *}.tar.gz"
keep_results() {  # before every step, after each leaderboard run (AFTER_RUN), and at the end however it comes
  tar -czf "$RESULTS/$PACK_NAME.part" -C "$PACK_DIR" . && mv "$RESULTS/$PACK_NAME.part" "$RESULTS/$PACK_NAME"
  for file in steps.txt scaling/walls.txt scaling/cluster_scaling.json two_gpu.md two_gpu.json; do
    [ -e "$PACK_DIR/$file" ] && cp "$PACK_DIR/$file" "$RESULTS/"
  done
  return 0
}
export -f keep_results
trap keep_results EXIT
trap 'exit 143' TERM INT  # a call's timeout: the EXIT trap still packs what ran
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
source scripts/carried_wheels.sh
export NVFP4_SECRET_SEED=${NVFP4_SECRET_SEED:-20261126}
if [ "$DEVICE" = cpu ]; then  # the smallest sizes that exercise every path
  export PROBLEMS=${PROBLEMS:-nvfp4_gemm} PATTERNS=${PATTERNS:-torch_reference.py} COPIES=${COPIES:-2}
  KILL_FILE=${KILL_FILE:-submissions/nvfp4_gemm/torch_reference.py} KILL_AFTER_S=${KILL_AFTER_S:-1}
  SERVICE_FILE=${SERVICE_FILE:-submissions/nvfp4_gemm/torch_reference.py}
  SERVICE_SUBMISSIONS=${SERVICE_SUBMISSIONS:-4} SERVICE_USERS=${SERVICE_USERS:-2}
  SERVICE_ONE_GPU_SUBMISSIONS=${SERVICE_ONE_GPU_SUBMISSIONS:-2} ONE_WORKER=(--serial)
  HOST_SHARE_FILE=${HOST_SHARE_FILE:-submissions/nvfp4_gemm/torch_reference.py} HOST_SHARE_ARGS=(--mode benchmark)
  ISSUE_FILE=${ISSUE_FILE:-submissions/nvfp4_gemm/torch_reference.py} ISSUE_SUBMISSIONS=${ISSUE_SUBMISSIONS:-6}
  ISSUE_USERS=${ISSUE_USERS:-3} ISSUE_ONE_GPU=${ISSUE_ONE_GPU:-2}
  SCHEDULER_FILE=${SCHEDULER_FILE:-submissions/nvfp4_gemm/torch_reference.py} SCHEDULER_KILL_AFTER_S=${SCHEDULER_KILL_AFTER_S:-1}
else
  export PATTERNS=${PATTERNS:-triton_*.py}
  ONE_WORKER=() HOST_SHARE_ARGS=()
fi
KILL_FILE=${KILL_FILE:-submissions/nvfp4_gemv/triton_gemv.py}
SERVICE_FILE=${SERVICE_FILE:-submissions/nvfp4_gemv/triton_gemv.py}
HOST_SHARE_FILE=${HOST_SHARE_FILE:-submissions/nvfp4_gemm/triton_gemm.py}
ISSUE_FILE=${ISSUE_FILE:-submissions/nvfp4_gemv/torch_reference.py} ISSUE_SUBMISSIONS=${ISSUE_SUBMISSIONS:-100}
ISSUE_USERS=${ISSUE_USERS:-10} ISSUE_ONE_GPU=${ISSUE_ONE_GPU:-24}
SCHEDULER_FILE=${SCHEDULER_FILE:-submissions/nvfp4_gemv/triton_gemv.py}
has() { [[ " $STEPS " == *" $1 "* ]]; }
say() { keep_results; echo "== $* ($(date -u +%FT%TZ))" | tee -a "$OUT/steps.txt"; }  # packs the steps before

service_1gpu() {  # [timeout s]: clients still waiting then count as lost (the queue's rate stands)
  CUDA_VISIBLE_DEVICES=${ONE_GPU:-1} python3 scripts/service_load.py "$OUT/service_1gpu" --device "$DEVICE" \
    --file "$SERVICE_FILE" --submissions "${SERVICE_ONE_GPU_SUBMISSIONS:-6}" --users "${SERVICE_USERS:-6}" \
    --timeout-s "${1:-1800}" "${ONE_WORKER[@]}" > /dev/null 2> "$OUT/service_1gpu.err"
  echo "service on one GPU: exit $?"
}
service_2gpu() {
  local submissions=${SERVICE_SUBMISSIONS:-12}
  CUDA_VISIBLE_DEVICES=0,1 python3 scripts/service_load.py "$OUT/service_2gpu" --device "$DEVICE" \
    --file "$SERVICE_FILE" --submissions "$submissions" --users "${SERVICE_USERS:-6}" \
    --kill-after "$(( (submissions + 3) / 4 ))" > /dev/null 2> "$OUT/service_2gpu.err"
  echo "service on two GPUs: exit $?"
}

if has build; then
  say build
  python3 setup.py build_ext --inplace > "$OUT/build.log" 2>&1 && python3 -c "import harness.worker._sealed" \
    && echo "core built" || { echo "build failed (see build.log)"; tail -5 "$OUT/build.log"; }
fi

if has leaderboard; then
  say "leaderboard: 1 GPU, --cluster local, TCP"
  busy=""
  if has service_1gpu; then  # the 1-GPU service baseline on GPU 1 while the serial run holds GPU 0
    busy="$WORK/gpu1_busy"; touch "$busy"
    ( service_1gpu; rm -f "$busy" ) &
  fi
  OUT="$OUT/scaling" DEVICE="$DEVICE" GPU1_BUSY_FILE="$busy" AFTER_RUN=keep_results bash scripts/cluster_scaling.sh \
    > "$OUT/scaling.log" 2>&1
  echo "cluster_scaling.sh: exit $?"; cat "$OUT/scaling/walls.txt" 2>/dev/null
  wait
elif has service_1gpu; then
  say "service on one GPU"; service_1gpu
fi

if has kill; then
  say "kill: a Dask worker SIGKILLed mid-run"
  mkdir -p "$OUT/kill" "$WORK/kill/$(basename "$(dirname "$KILL_FILE")")"
  for copy in $(seq 1 "${KILL_COPIES:-3}"); do
    { cat "$KILL_FILE"; echo "# copy $copy for the kill run"; } \
      > "$WORK/kill/$(basename "$(dirname "$KILL_FILE")")/$(basename "$KILL_FILE" .py)_$copy.py"
  done
  check=$(ls "$WORK"/kill/*/*_1.py)
  start=$EPOCHREALTIME
  # bash -c writes its pid and becomes the leaderboard (exec): the killer needs the leaderboard's pid
  bash -c 'echo $$ > "$0"; exec "$@"' "$WORK/kill.pid" python3 -m harness leaderboard --submissions "$WORK/kill" \
    --db "$OUT/kill/kill_2gpu.db" --out "$OUT/kill/site" --device "$DEVICE" --cluster local --gpu-check "$check" \
    --force 2>&1 >/dev/null \
    | while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$OUT/kill/kill_2gpu.log" &
  while [ ! -s "$WORK/kill.pid" ]; do sleep 0.1; done
  python3 scripts/kill_busy_worker.py "$(cat "$WORK/kill.pid")" "$OUT/kill/kill_2gpu.log" \
    --after-s "${KILL_AFTER_S:-5}" | tee "$OUT/kill/killed.txt"
  wait
  end=$EPOCHREALTIME
  echo "{\"kill_2gpu\": $(python3 -c "print($end - $start)")}" > "$OUT/kill/kill_2gpu.wall.json"
  python3 scripts/cluster_timeline.py "$OUT/kill/kill_2gpu.log" "$start" "$end" > "$OUT/kill/kill_2gpu.timeline.json"
  grep -E "^\S+ (\[|leaderboard:)" "$OUT/kill/kill_2gpu.log" | cut -d' ' -f2- | tail -n 8
fi

if has service_2gpu; then
  say "service on two GPUs, killed and restarted once"; service_2gpu
fi

if has service_issue; then  # the issue's size, then one GPU's rate on a subset of the same work, in one call
  say "service: $ISSUE_SUBMISSIONS submissions from $ISSUE_USERS users on two GPUs, then $ISSUE_ONE_GPU on one"
  issue_start=$SECONDS
  SERVICE_FILE=$ISSUE_FILE SERVICE_SUBMISSIONS=$ISSUE_SUBMISSIONS SERVICE_USERS=$ISSUE_USERS service_2gpu
  left=$(( ${ISSUE_DEADLINE_S:-540} - (SECONDS - issue_start) - 30 ))  # 30 s: the service's start and stop
  if [ "$left" -gt 60 ]; then
    SERVICE_FILE=$ISSUE_FILE SERVICE_ONE_GPU_SUBMISSIONS=$ISSUE_ONE_GPU SERVICE_USERS=$ISSUE_USERS service_1gpu "$left"
  else
    echo "no time left for the one-GPU subset (${left} s): run STEPS=\"build service_1gpu table\" with" \
      "SERVICE_FILE=$ISSUE_FILE SERVICE_ONE_GPU_SUBMISSIONS=$ISSUE_ONE_GPU SERVICE_USERS=$ISSUE_USERS"
  fi
fi

if has host_share; then
  say "host share: one evaluation alone against two on one host"
  python3 scripts/host_share_probe.py "$OUT/host_share" --file "$HOST_SHARE_FILE" --device "$DEVICE" \
    --rounds "${HOST_SHARE_ROUNDS:-2}" "${HOST_SHARE_ARGS[@]}" 2> "$OUT/host_share.err" | tail -n 12
fi

if has scheduler; then
  say "a TCP cluster's scheduler killed mid-run and started again"
  python3 scripts/scheduler_restart.py "$OUT/scheduler" --file "$SCHEDULER_FILE" --device "$DEVICE" \
    --copies "${SCHEDULER_COPIES:-4}" --kill-after-s "${SCHEDULER_KILL_AFTER_S:-5}" 2> "$OUT/scheduler.err"
  echo "scheduler restart: exit $?"
fi

if has table; then
  say table
  python3 scripts/two_gpu_report.py "$OUT"
fi
