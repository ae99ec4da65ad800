#!/usr/bin/env bash
# GPU check of issue 13 (the compiled timing core). Writes every log and JSON under ${OUT:-out}.
#   bash scripts/sealed_check.sh [build] [probe] [b2b] [timing] [adversarial]   (default: all five)
# build: compile harness._sealed in place. probe: which sandbox steps keep CUDA working here
# (sets NVFP4_SANDBOX for the later steps; scripts/sandbox_probe.py). b2b: ten back-to-back benchmark runs of the Triton
# GEMV (run this first on a fresh machine). timing: scripts/timing_validation.py through the core.
# adversarial: every row of tests/adversarial on the GPU (cpu rows on cuda), twins compared.
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-out}
mkdir -p "$OUT"
steps=${*:-build probe b2b timing adversarial}
for step in $steps; do
  case $step in
    build) python3 setup.py build_ext --inplace >"$OUT/build.log" 2>&1; python3 -c "import harness._sealed" \
             && echo "build: harness._sealed OK" || { echo "build: FAILED (see $OUT/build.log)"; tail -5 "$OUT/build.log"; } ;;
    probe) python3 scripts/sandbox_probe.py "$OUT/sandbox_probe.json" | tee "$OUT/sandbox_probe.log" | cut -c1-160
           export "$(tail -1 "$OUT/sandbox_probe.log")" ;;
    b2b)
      for run in $(seq 1 10); do
        python3 -m harness eval nvfp4_gemv submissions/nvfp4_gemv/triton_gemv.py --mode benchmark \
          --json "$OUT/b2b_$run.json" >"$OUT/b2b_$run.log" 2>&1
        echo "b2b run $run: exit $? $(grep -E '^Geometric|^Result' "$OUT/b2b_$run.log" | tr '\n' ' ')"
      done ;;
    timing) python3 scripts/timing_validation.py "$OUT/timing_validation.json" 2>&1 | tail -4 ;;
    adversarial) python3 tests/adversarial/run_gpu.py "$OUT/adversarial.json" ${ONLY:+--only "$ONLY"} \
                   >"$OUT/adversarial.log" 2>&1; echo "adversarial: exit $?"; grep -E "MISMATCH|mismatch" "$OUT/adversarial.log" ;;
  esac
done
