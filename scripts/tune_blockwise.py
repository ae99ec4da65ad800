"""Sweep the Triton blockwise fp8 GEMM's configurations on each benchmark shape, beside cuBLAS (GPU).

For every fp8_blockwise_gemm benchmark shape: the vendor file (torch._scaled_mm, cuBLAS) and each
configuration of submissions/fp8_blockwise_gemm/triton_blockwise_gemm.py are timed with
triton.testing.do_bench (L2 flushed before every call, median), the best configuration's output is
checked against the reference, and the ratio vendor / best (the "% of vendor") is printed.

    python3 scripts/tune_blockwise.py OUT.json
"""

from __future__ import annotations

import importlib
import itertools
import json
import sys
from pathlib import Path

import triton.testing

from harness.contract.task_spec import load_task, shape_text
from harness.sol.replay_clock import load_shipped as load

SMALL_M = [dict(block_m=64, block_n=bn, num_warps=4, num_stages=st, split_k=sk)
           for bn, st, sk in itertools.product((64, 128), (3, 4), (1, 2, 4))]
LARGE_M = [dict(block_m=bm, block_n=bn, num_warps=w, num_stages=st, split_k=1)
           for (bm, bn), w, st in itertools.product(((128, 128), (128, 256), (256, 128), (64, 256)), (8,), (3, 4))] + [
    # One warpgroup a program, several programs an SM (no spills by a CPU compile for sm_90a: 90-160 registers)
    dict(block_m=bm, block_n=bn, num_warps=4, num_stages=st, split_k=1)
    for (bm, bn), st in itertools.product(((64, 128), (128, 64), (64, 64)), (2, 3, 4))]


def median_us(call) -> float:
    return triton.testing.do_bench(call, warmup=25, rep=100, return_mode="median") * 1e3


def tune_case(case: dict, reference, vendor, kernel) -> dict:
    """One shape: cuBLAS, the file's own choice, every configuration; the best one checked."""
    blockwise_gemm = kernel.__globals__["blockwise_gemm"]  # the file's entry point with its knobs
    data = reference.generate_input(**case, device="cuda")
    vendor_us = median_us(lambda: vendor(data))
    timed = []
    for config in SMALL_M if case["m"] <= 128 else LARGE_M:
        try:
            timed.append((median_us(lambda config=config: blockwise_gemm(data, **config)), config))
        except Exception as error:  # a configuration that does not compile or fit is skipped
            print(f"  {config}: {type(error).__name__}: {str(error).splitlines()[0][:100]}", flush=True)
    best_us, best = min(timed, key=lambda t: t[0])
    ok, message = reference.check_implementation(data, blockwise_gemm(data, **best))
    default_us = median_us(lambda: kernel(data))
    return {"shape": shape_text(case), "vendor_us": vendor_us, "default_us": default_us, "best_us": best_us,
            "best": best, "pct_of_vendor_best": 100 * vendor_us / best_us,
            "pct_of_vendor_default": 100 * vendor_us / default_us, "check": ok, "message": message}


def main() -> int:
    out = Path(sys.argv[1])
    task = load_task("fp8_blockwise_gemm")
    reference = importlib.import_module("problems.fp8_blockwise_gemm.reference")
    vendor = load(task.vendor.file)
    kernel = load(Path("submissions/fp8_blockwise_gemm/triton_blockwise_gemm.py"))
    rows = []
    for case in task.benchmarks:
        rows.append(tune_case(case, reference, vendor, kernel))
        print(json.dumps(rows[-1]), flush=True)
    out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
