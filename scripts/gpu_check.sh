#!/usr/bin/env bash
# The whole GPU check: one script, run through the device tool in as few calls as its 10-minute
# limit allows (name the steps per call). Everything lands in $OUT: summary.txt and, per call,
# results-<first step>.tar.gz with every log and JSON.
#   bash scripts/gpu_check.sh STEP...
# Steps, in the order a fresh machine should see them:
#   env         nvidia-smi, torch and triton versions
#   reference   every test and benchmark shape's reference on the GPU, checked against the CPU's
#   calibrate   this GPU's measured copy bandwidth and matmul rate; sol: the speed-of-light tables
#   build       compile the timing core (harness.worker._sealed) in place, and write the bytecode a run imports and
#               the harness's own Triton kernels (harness/warm.py; `make install` does both on a machine with a package index)
#   b2b         ten back-to-back benchmark runs of the Triton GEMV (first use of the GPU: run it first)
#   house       `make eval` of the Triton GEMV (the README's path) and its medians and timing method
#   ladder_b2b  ten back-to-back ranked runs of the timing ladder's 2 us and 10 us rungs (first use of
#               the GPU on a fresh machine: run it first), then per rung the in-band count against the replay clock
#               and the spread across runs of median, overhead and raw event time (scripts/ladder_rungs.py)
#   vendor      calibrate --vendor: cuBLAS's time per problem and shape (or why it cannot run here)
#   fp8         the fp8 problems' vendor and torch files through harness eval (ranked where they run)
#   tune        the Triton blockwise fp8 GEMM's configurations beside cuBLAS (scripts/tune_blockwise.py)
#   tune_nvfp4  the four NVFP4 Triton baselines' configurations, % of SOL per shape and geomean
#               (scripts/tune_nvfp4.py; TUNE_PROBLEMS narrows it, TUNE_BUDGET_S caps it: 390 s)
#   ptx         the kernels tune_nvfp4 compiled as ptxas sees them: shared-memory stores and loads, registers,
#               spills, wgmma serialised, writes to the registers of wgmmas in flight (scripts/ptx_summary.py;
#               run after tune_nvfp4 in the same call)
#   compiled    the shipped Triton GEMMs compiled by this machine's Triton: tests/test_triton_baselines_ptx.py
#               (no shared-memory round trip, no write to a wgmma in flight; CI's newer Triton does not show the latter)
#   ncu         Nsight Compute's time beside fidelity's graph replay and harness medians (run after it), each
#               call behind the reading flush and ncu under --cache-control none (replay's cache policy); one
#               ncu run per file, one more for ncu's floor (an empty kernel, held against replay's reading
#               of it); prints the whole table docs/timing.md shows (also ncu_times.md in the tarball), the
#               floor and the second-launch verdict (the ladder launched twice per call)
#   kernel_replay issue 38: graph replay kernel by kernel (a stamp between every two kernel nodes of the
#               captured call, in a graph built by hand) on every call ncu saw as several kernels, held against
#               ncu less its floor per kernel (scripts/kernel_replay.py; run after ncu in the same call)
#   cluster_launch issue 38: why a stream charges cuBLAS's fp8 call more than a graph does: spin kernels with
#               clusters and large parameter blocks, and the fp8 problem's cuBLAS and Triton files, eager and
#               graph-launched under events, and by replay (scripts/cluster_launch_probe.py)
#   ncu_kernels issue 37: what limits each Triton baseline's kernels, per kernel of one call on every benchmark
#               shape: Nsight Compute's duration, SM, L2 and DRAM throughput, occupancy, waves, registers
#               (scripts/ncu_kernels.py; NCU_FILES narrows it; the table also as ncu_kernels.md in the tarball)
#   ncu_short   why ncu reads more than replay under 10 us: replay's stamps, ncu's SM span, ncu under base and
#               free clocks and with and without its cache control (scripts/ncu_short_kernels.py)
#   flush       the replay clock on the ladder and the GEMV under three L2 flushes (scripts/flush_variants.py)
#   flush_ncu   Nsight Compute's time of the flush step's kernels (reading flush), beside its three replays
#   hang_probe  issue 34's hangs as a contestant runs them (scripts/hang_probe.sh; HANG_ROUTES=0: no per-route runs)
#   probe       which sandbox steps keep CUDA working on this machine, and whether a sandboxed worker
#               can open a CUDA IPC handle of the parent's (scripts/sandbox_probe.py); then, where strace
#               is installed, every open a Triton GEMV's test run makes under Landlock alone that the
#               kernel refused (EACCES), pids blanked (what the rule set would break)
#   patterns    the contest patterns that start child processes, under the default sandbox, ranked
#               (tests/contest/gpu_patterns: load_inline's nvcc build, torch.compile's compile workers,
#               a child that starts CUDA of its own): each file's verdict and what its children said, its
#               medians; fails unless load_inline's 10 ms wait on the legacy default stream is inside the window
#   landlock_cuda what CUDA needs of /proc under the worker's Landlock rules: each extra grant alone, and
#               every /proc and /dev open through libc logged (scripts/landlock_cuda_probe.py)
#   inputs      CPU vs GPU bit identity of every cpu/contest test shape; generation time per benchmark
#   timing      the timer against graph replay (~4 us kernel) and a 1 GiB copy (scripts/timing_validation.py)
#   costs       the parent's share of a timed call, piece by piece (scripts/parent_costs.py)
#   first_call  where the first test's seconds go: scripts/first_call_probe.py twice with one Triton cache
#   transfer    a large output's way back: the result pipe against the parent's output file, and
#               SHA-256 speeds on both sides (scripts/output_transfer.py; run after build)
#   leaf_hash   the outputs' digest leaves by the GPU's kernel against hashlib, every padding length, and
#               their ms at the contest's output sizes beside the host's (scripts/leaf_hash_check.py)
#   compare     the output check's fused kernel against torch's float64 passes: every verdict equal (special
#               values, the allowance's edge, planted NaN and infinities at the contest's output sizes), and
#               both ways' ms per output (scripts/compare_check.py)
#   references  every NVFP4 test and benchmark shape: old (float64 decode) and new (block kernel)
#               reference timed, bit-identical or the step fails (scripts/parent_costs.py --references)
#   throughput  every Triton baseline ranked (leaderboard mode): wall time, timed calls, harness ms/call,
#               and a `targets` line per file (issue 33: <= 5 ms per NVFP4 shape, <= 20 ms for the 200 MB output)
#               (empty compile caches: each file's first ranked run, as on a fresh machine)
#   coldstart   issue 33: `make eval` of the Triton GEMV twice (the second with the first's compile
#               caches) and a leaderboard over submissions/ on one GPU, each timed whole (scripts/coldstart.py)
#   start_profile issue 33: where `harness eval`'s start goes: torch's import and first CUDA tensor alone,
#               the parent's imports (-X importtime), the parent's whole run under cProfile (scripts/start_profile.py)
#   eval        every file under submissions/ (EVAL_FILES narrows it) through harness eval, mode all
#   fidelity    every ladder rung and shipped baseline (Triton and cuBLAS files) and the ladder launched twice per
#               call, by the replay clock (%globaltimer stamps around each call inside one CUDA graph, the reading
#               flush outside them), beside throughput's (or window's, or eval's) medians, each row's verdict;
#               files without medians are run through harness eval first (scripts/graph_replay.py --eval-missing);
#               then ncu. Issue 38's acceptance on one H100 call: bash scripts/gpu_check.sh build fidelity ncu
#   contest     the real contest files gathered into .contest/ by scripts/contest_files.py (git-ignored; carry it)
#   adversarial every GPU row of tests/adversarial (cheats, faults, sealed-timing attacks);
#               ADVERSARIAL_PART=K/N runs one N-th of them; ADVERSARIAL_ONLY=p02,s00 only rows naming these
#   window      issue 40's timed window: the four NVFP4 Triton baselines ranked against run 13's medians
#               (within 2%) and the timed-window adversarial rows with their twins
#               (scripts/window_check.py; WINDOW_PART=baselines or rows splits it across two calls)
#   drawn       issue 40's drawn inputs: every NVFP4 shape's captured draw replayed by the core under fresh
#               masked seeds, bit-identical to generate_input's, and the core's ms per call with and without
#               the draw (scripts/drawn_check.py; run after build); then issue 33's parent draw: each shape's
#               draw and reference replayed from the parent's own graphs, bit-identical to generate_input and
#               ref_kernel, ms per draw+reference before/after (scripts/parent_draw_check.py)
#   stream_gap  issue 38: the ladder once and twice per call by CUDA events on the legacy default stream, a
#               pool stream, a blocking stream (scripts/stream_gap_probe.py): which stream pays a second launch
#   honest_ranked issue 40: HONEST_RUNS (20) ranked runs of the four NVFP4 Triton baselines in turn, a fresh
#               secret each; every one must pass and be rankable (about 15 s a run)
#   factors     issue 38: which of a process's objects a short rung's event time follows (input placement, stream),
#               behind a queued sleep and behind a spin on every SM as the core's hold, eight processes each
#               (scripts/stream_factors.py; about 2 min)
#   launch_path issue 38: does a short rung's per-process offset come with its stream launch? The ladder's 2 us rungs
#               ranked in ten worker processes each as shipped and launched from a CUDA graph inside custom_kernel
#               (scripts/graph_launched_ladder.py), alternated (scripts/launch_path_probe.py; run
#               after build; about 3 min)
#   decode_overlap issue 37: does B's decode hide under the wgmmas? The hand-written CUDA GEMM in variants (no
#               decode, plain integer work instead, on the vector or the uniform datapath, decode after the wait,
#               an integer operation for each HMUL2, A from shared memory) timed on the
#               long GEMM shape (scripts/decode_overlap_probe.py; builds each variant with nvcc, about 4 min)
#   sanitize    the planted defects and the baselines under compute-sanitizer
#   service     baselines through a local submission service vs harness eval (SERVICE_FILES)
#   leaderboard the ranked leaderboard over submissions/
#   supervisor  issue 40's syscall supervisor: the Triton GEMV ranked (its sandbox line, the notification
#               count), its benchmark medians with and without the supervisor, every syscall-class row
#               (x00-x12, p01c, s20) on the GPU; run after build, as root (workers drop to uid 65534);
#               the ranked run prints its notifications by syscall; SUPERVISOR_PART=ranked stops there
# Carried wheels: .whl (CuTe DSL 4.3.5) and .whl-service (fastapi, uvicorn) when present.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
WORK=$(mktemp -d)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:${PYTHONPATH:-}"
source scripts/carried_wheels.sh
summary="$OUT/summary.txt" STEP_LOGS=$WORK AFTER_STEP=keep_results
keep_results() { tar -czf "$OUT/results-$first.tar.gz" -C "$WORK" .; }  # after every step: a call cut short keeps what ran
source scripts/step_log.sh
b2b() {
  for run in $(seq 1 10); do
    python3 -m harness eval nvfp4_gemv submissions/nvfp4_gemv/triton_gemv.py --mode benchmark \
      --json "$WORK/b2b_$run.json" > "$WORK/b2b_$run.log" 2>&1
    echo "run $run: exit $? $(grep -E '^(m=|Geometric|Result)' "$WORK/b2b_$run.log" | awk '{print $1, $2, $3, $4}' | tr '\n' ' ')"
  done
}
eval_all() {
  mkdir -p "$WORK/eval"
  for file in ${EVAL_FILES:-submissions/*/*.py}; do
    name=$(basename "$(dirname "$file")")__$(basename "$file" .py)
    python3 -m harness eval "$file" --json "$WORK/eval/$name.json" > "$WORK/eval/$name.log" 2>&1
    echo "$name: exit $? $(grep -E '^(Geometric|Result)' "$WORK/eval/$name.log" | tr '\n' ' ')"
  done
}
house() {
  make eval SUBMISSION=submissions/nvfp4_gemv/triton_gemv.py JSON="$WORK/house_gemv.json"
  echo "make eval: exit $?"
  python3 scripts/run_summary.py "$WORK/house_gemv.json"
}
factors() {  # scripts/stream_factors.py in eight processes behind each kind of front, then the summary
  local seed
  mkdir -p "$WORK/factors"
  for seed in $(seq 1 8); do
    python3 scripts/stream_factors.py run "$seed" "$WORK/factors/sleep_$seed.json"
    python3 scripts/stream_factors.py run "$seed" "$WORK/factors/front_$seed.json" --front
  done
  python3 scripts/stream_factors.py summary "$WORK"/factors/*.json
}
ladder_b2b() {  # a copy of the ladder with only its 2 us and 10 us rungs, ranked ten times in a row
  # The copy must be readable by the worker's unprivileged uid ($WORK is private to this user).
  local copy secret="$WORK/ladder/secret"
  mkdir -p "$WORK/ladder" && copy=$(python3 scripts/ladder_rungs.py copy "$(mktemp -d)" 65536:1 2228224:1)
  python3 -c "import secrets; print(secrets.randbits(62))" > "$secret"; chmod 600 "$secret"
  for run in $(seq 1 10); do
    python3 -m harness eval "$copy" submissions/timing_ladder/triton_ladder.py --mode leaderboard \
      --secret-seed-file "$secret" --json "$WORK/ladder/run_$run.json" > "$WORK/ladder/run_$run.log" 2>&1
    echo "run $run: exit $? $(python3 scripts/run_summary.py "$WORK/ladder/run_$run.json" | tr '\n' ' ')"
  done
  python3 scripts/ladder_rungs.py summary $(ls "$WORK"/ladder/run_*.json | sort -V) --replay  # verdict, what moved
}
fp8_files() {
  local file name
  mkdir -p "$WORK/fp8"; python3 -c "import secrets; print(secrets.randbits(62))" > "$WORK/fp8/secret"
  chmod 600 "$WORK/fp8/secret"
  for file in submissions/fp8_blockwise_gemm/scaled_mm.py submissions/fp8_blockwise_gemm/triton_blockwise_gemm.py \
              submissions/mxfp8_gemm/scaled_mm_mxfp8.py submissions/nvfp4_gemm/scaled_mm_fp4.py; do
    name=$(basename "$(dirname "$file")")__$(basename "$file" .py)
    python3 -m harness eval "$file" --mode leaderboard --secret-seed-file "$WORK/fp8/secret" \
      --json "$WORK/fp8/$name.json" > "$WORK/fp8/$name.log" 2>&1
    echo "$name: exit $? $(tail -n 14 "$WORK/fp8/$name.log" | grep -E '% vendor|Geometric|Result' | tr '\n' ' ')"
    [ -f "$WORK/fp8/$name.json" ] && python3 scripts/run_summary.py "$WORK/fp8/$name.json"
  done
  for file in submissions/mxfp8_gemm/torch_reference.py submissions/fp8_blockwise_gemm/torch_reference.py; do
    python3 -m harness eval "$file" --mode test > "$WORK/fp8/$(basename "$(dirname "$file")")_torch.log" 2>&1
    echo "$file (test mode): exit $?"
  done
}
supervisor() {
  local dir="$WORK/supervisor" gemv=submissions/nvfp4_gemv/triton_gemv.py
  local without=netns,uid,no_new_privs,not_dumpable,landlock  # the default steps but 'syscalls'
  mkdir -p "$dir"; python3 -c "import secrets; print(secrets.randbits(62))" > "$dir/secret"; chmod 600 "$dir/secret"
  NVFP4_SUPERVISOR_MIX="$dir/mix.jsonl" python3 -m harness eval nvfp4_gemv "$gemv" --mode leaderboard \
    --secret-seed-file "$dir/secret" --verbose --json "$dir/ranked.json" > "$dir/ranked.log" 2>&1
  echo "ranked with the supervisor: exit $?"; grep -E '^(sandbox|Geometric|Result|Wall time)' "$dir/ranked.log"
  echo "notifications by syscall (one line per worker): $(cat "$dir/mix.jsonl" 2>/dev/null)"
  python3 -c "import json,sys; w=json.load(open(sys.argv[1]))['wall_s']; print('supervisor', w.get('supervisor'), 's over',
    w.get('supervisor_notifications'), 'notifications')" "$dir/ranked.json"
  [ "${SUPERVISOR_PART:-}" = ranked ] && return
  for run in 1 2; do  # alternated, so that a drift of the GPU's clocks does not look like the supervisor's cost
    for steps in default "$without"; do
      if [ "$steps" = default ]; then unset NVFP4_SANDBOX; else export NVFP4_SANDBOX=$steps; fi
      python3 -m harness eval nvfp4_gemv "$gemv" --mode benchmark --verbose --json "$dir/bench_${run}_${steps%%,*}.json" \
        > "$dir/bench_${run}_${steps%%,*}.log" 2>&1
      echo "benchmark run $run, steps $steps: exit $?"; python3 scripts/run_summary.py "$dir/bench_${run}_${steps%%,*}.json"
      grep -E '^(sandbox|Wall time)' "$dir/bench_${run}_${steps%%,*}.log" | cut -c1-400
    done
  done
  unset NVFP4_SANDBOX
  python3 tests/adversarial/run_gpu.py "$dir/rows.json" --only x0,x1,p01c,s20  # x00-x12, and the mprotect rows
}
honest_ranked() {  # issue 40: HONEST_RUNS (20) ranked runs of the four NVFP4 Triton baselines in turn, a fresh secret each
  local dir="$WORK/honest" files run file secret status rejected=0
  files=(submissions/nvfp4_gemv/triton_gemv.py submissions/nvfp4_gemm/triton_gemm.py
         submissions/nvfp4_dual_gemm/triton_dual_gemm.py submissions/nvfp4_group_gemm/triton_group_gemm.py)
  mkdir -p "$dir"; secret="$dir/secret"
  for run in $(seq 1 "${HONEST_RUNS:-20}"); do
    file=${files[$(( (run - 1) % ${#files[@]} ))]}
    python3 -c "import secrets; print(secrets.randbits(62))" > "$secret"; chmod 600 "$secret"
    python3 -m harness eval "$file" --mode leaderboard --secret-seed-file "$secret" --json "$dir/run_$run.json" \
      > "$dir/run_$run.log" 2>&1
    code=$?
    status=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['status'], r.get('rankable'))" \
      "$dir/run_$run.json" 2>/dev/null || echo "no-result")
    [ "$status" = "passed True" ] || rejected=$((rejected + 1))
    echo "run $run $file: exit $code $status $(grep -E '^Result' "$dir/run_$run.log" | cut -c1-200)"
  done
  echo "honest ranked runs: ${HONEST_RUNS:-20}, not passed and rankable: $rejected"
  [ "$rejected" -eq 0 ]
}
landlock_refusals() {  # what a worker under Landlock alone was refused: the rule set's misses, if any
  command -v strace > /dev/null || { echo "strace is not installed: no trace of the refusals"; return 0; }
  NVFP4_SANDBOX=no_new_privs,not_dumpable,landlock strace -f -qq -e trace=open,openat,openat2 -o "$WORK/opens.txt" \
    python3 -m harness eval nvfp4_gemv submissions/nvfp4_gemv/triton_gemv.py --mode test > "$WORK/opens_run.log" 2>&1
  echo "test run under strace: exit $? $(grep -E '^Result' "$WORK/opens_run.log")"
  echo "opens refused by the kernel (EACCES), by path: $(grep -c EACCES "$WORK/opens.txt")"
  grep EACCES "$WORK/opens.txt" | grep -oE '"[^"]*"' | sed -E 's#/[0-9]+(/|")#/N\1#g' | sort | uniq -c | sort -rn | head -30
}
gpu_patterns() {
  local dir="$WORK/patterns" file name
  mkdir -p "$dir"; python3 -c "import secrets; print(secrets.randbits(62))" > "$dir/secret"; chmod 600 "$dir/secret"
  for file in tests/contest/gpu_patterns/*.py; do
    name=$(basename "$file" .py)
    python3 -m harness eval nvfp4_gemv "$file" --mode leaderboard --secret-seed-file "$dir/secret" --verbose \
      --json "$dir/$name.json" > "$dir/$name.log" 2>&1
    echo "$name: exit $? $(grep -E '^(Result|Wall time)' "$dir/$name.log" | cut -c1-300 | tr '\n' ' ')"
    grep -E 'child|Error' "$dir/$name.log" | head -5 | cut -c1-300
    [ -f "$dir/$name.json" ] && python3 scripts/run_summary.py "$dir/$name.json"
  done
  # load_inline_cuda.py waits 10 ms on the legacy default stream: a median under that, its work outside the window
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); m=[c['timing']['median_us'] for c in r['cases'] if c.get('timing')]
print('legacy default stream inside the window:', bool(m) and min(m) >= 10000, 'medians', m); sys.exit(not m or min(m) < 10000)" \
    "$dir/load_inline_cuda.json"
}
sanitize_all() {
  python3 tests/sanitize/run_gpu.py "$WORK/sanitize" --shapes 2
  python3 -m harness eval nvfp4_gemv tests/sanitize/oob_write.py --mode sanitize --json "$WORK/oob.json" | tail -15
}

# The GPU's clocks, power and temperature every 200 ms for the whole call (clocks.csv in the tarball).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv,noheader -lms 200 > "$WORK/clocks.csv" 2>/dev/null &
clock_logger=$!
steps=${*:-build b2b probe env compiled inputs reference calibrate sol timing throughput eval fidelity contest adversarial sanitize service leaderboard}
first=${steps%% *}
for step in $steps; do
  case $step in
    env) run_step env bash -c 'nvidia-smi; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"' ;;
    reference) run_step reference python3 scripts/reference_check.py "$WORK/reference.json" ;;
    calibrate) run_step calibrate python3 -m harness calibrate --force ;;
    sol) run_step sol bash -c 'for p in nvfp4_gemv nvfp4_gemm nvfp4_dual_gemm nvfp4_group_gemm; do python3 -m harness sol $p; done' ;;
    build) run_step build bash -c 'python3 setup.py build_ext --inplace && python3 -c "import harness.worker._sealed; print(\"core OK\")" && python3 -m harness.warm' ;;
    b2b) run_step b2b b2b ;;
    house) run_step house house ;;
    ladder_b2b) run_step ladder_b2b ladder_b2b ;;
    vendor) run_step vendor python3 -m harness calibrate --vendor ;;
    fp8) run_step fp8 fp8_files ;;
    tune) run_step tune python3 scripts/tune_blockwise.py "$WORK/tune_blockwise.json" ;;
    tune_nvfp4) TRITON_CACHE_DIR="$WORK/tune_nvfp4_kernels" run_step tune_nvfp4 python3 scripts/tune_nvfp4.py "$WORK/tune_nvfp4.json" --budget-s "${TUNE_BUDGET_S:-390}" \
                  ${TUNE_PROBLEMS:+--problems "$TUNE_PROBLEMS"} ;;
    compiled) run_step compiled python3 -m pytest -q -p no:cacheprovider --noconftest tests/test_triton_baselines_ptx.py ;;
    ptx) run_step ptx python3 scripts/ptx_summary.py "$WORK/tune_nvfp4_kernels" "$WORK/ptx_summary.json" ;;
    ncu) TAIL=90 run_step ncu python3 scripts/ncu_times.py "$WORK/graph_replay.json" "$WORK/ncu_times.json" ;;
    kernel_replay) run_step kernel_replay python3 scripts/kernel_replay.py "$WORK/ncu_times.json" "$WORK/kernel_replay.json" ;;
    cluster_launch) run_step cluster_launch python3 scripts/cluster_launch_probe.py "$WORK/cluster_launch.json" ;;
    ncu_short) run_step ncu_short python3 scripts/ncu_short_kernels.py "$WORK/ncu_short" ;;
    ncu_kernels) TAIL=80 run_step ncu_kernels python3 scripts/ncu_kernels.py "$WORK/ncu_kernels.json" ${NCU_FILES:-} ;;
    flush) run_step flush python3 scripts/flush_variants.py "$WORK/flush_variants.json" ;;
    flush_ncu) run_step flush_ncu python3 scripts/ncu_times.py "$WORK/flush_variants.json" "$WORK/flush_ncu.json" ;;
    hang_probe) run_step hang_probe env OUT="$WORK/hang_probe" bash scripts/hang_probe.sh ;;
    probe) run_step probe python3 scripts/sandbox_probe.py "$WORK/sandbox_probe.json"
           run_step landlock_refusals landlock_refusals ;;
    patterns) run_step patterns gpu_patterns ;;
    landlock_cuda) run_step landlock_cuda python3 scripts/landlock_cuda_probe.py "$WORK/landlock_cuda" ;;
    inputs) run_step inputs python3 scripts/check_input_digests.py --device cuda --out "$WORK/inputs" ;;
    timing) run_step timing python3 scripts/timing_validation.py "$WORK/timing_validation.json" ;;
    costs) run_step costs python3 scripts/parent_costs.py "$WORK/parent_costs.json" ;;
    first_call) run_step first_call bash -c 'cache=$(mktemp -d); for run in empty kept; do
                  echo "$run cache: $(TRITON_CACHE_DIR=$cache python3 scripts/first_call_probe.py)"; done' ;;
    transfer) run_step transfer python3 scripts/output_transfer.py --out "$WORK/output_transfer.json" ;;
    leaf_hash) run_step leaf_hash python3 scripts/leaf_hash_check.py "$WORK/leaf_hash.json" ;;
    compare) run_step compare python3 scripts/compare_check.py "$WORK/compare.json" ;;
    references) run_step references python3 scripts/parent_costs.py "$WORK/references.json" --references ;;
    throughput) run_step throughput python3 scripts/throughput.py "$WORK/throughput" ${THROUGHPUT_FILES:-} ;;
    coldstart) run_step coldstart python3 scripts/coldstart.py "$WORK/coldstart" ;;
    start_profile) run_step start_profile python3 scripts/start_profile.py "$WORK/start_profile" ;;
    eval) run_step eval eval_all ;;
    fidelity)  # against the ranked runs' medians when the throughput step ran, else the eval step's
      medians=$WORK/eval; [ -d "$WORK/throughput" ] && medians=$WORK/throughput
      [ -d "$WORK/window" ] && medians=$WORK/window  # the window step's ranked baselines
      medians=${FIDELITY_MEDIANS:-$medians}  # the ranked runs of an earlier call, carried here
      mkdir -p "$medians"
      run_step fidelity python3 scripts/graph_replay.py "$WORK/graph_replay.json" "$medians" --eval-missing \
        ${FIDELITY_FILES:-} ;;
    contest) run_step contest python3 scripts/contest_verdicts.py .contest "$WORK/contest.json" --jobs "${CONTEST_JOBS:-4}" ;;
    adversarial) run_step adversarial python3 tests/adversarial/run_gpu.py "$WORK/adversarial.json" \
                   --part "${ADVERSARIAL_PART:-1/1}" ${ADVERSARIAL_ONLY:+--only "$ADVERSARIAL_ONLY"} ;;
    drawn) run_step drawn python3 scripts/drawn_check.py "$WORK/drawn.json"
           run_step parent_drawn python3 scripts/parent_draw_check.py "$WORK/parent_drawn.json" ;;
    window) run_step window python3 scripts/window_check.py "$WORK/window" --part "${WINDOW_PART:-all}" ;;
    sanitize) run_step sanitize sanitize_all ;;
    honest_ranked) run_step honest_ranked honest_ranked ;;
    decode_overlap) run_step decode_overlap python3 scripts/decode_overlap_probe.py "$WORK/decode_overlap.json" ;;
    stream_gap) run_step stream_gap python3 scripts/stream_gap_probe.py "$WORK/stream_gap.json" ;;
    launch_path) run_step launch_path python3 scripts/launch_path_probe.py "$WORK/launch_path.json" ;;
    factors) run_step factors factors ;;
    service) run_step service env OUT="$WORK/service" EVAL_FILES="${SERVICE_FILES:-submissions/nvfp4_gemv/*.py}" \
               bash scripts/service_check.sh ;;
    leaderboard) run_step leaderboard python3 -m harness leaderboard --db "$WORK/leaderboard.db" --out "$WORK/leaderboard" ;;
    supervisor) run_step supervisor supervisor ;;
    *) log "unknown step $step" ;;
  esac
done
kill "$clock_logger" 2>/dev/null
log "== SM clock MHz over the call (min / median / max): $(cut -d, -f2 "$WORK/clocks.csv" | tr -dc '0-9\n' | \
  sort -n | awk '{v[NR]=$1} END {if (NR) print v[1], "/", v[int((NR+1)/2)], "/", v[NR]}')"
tar -czf "$OUT/results-$first.tar.gz" -C "$WORK" .
log "== done: $OUT/results-$first.tar.gz"
