"""Sweep the four NVFP4 Triton baselines' configurations on each benchmark shape (GPU): % of SOL.

For every problem (GEMV, GEMM, dual GEMM, grouped GEMM) and each configuration of GRID (the
file's own default first): on every benchmark shape of task.yml, the output of one call is
checked against the problem's reference (expected output computed once per shape), then the
call is timed with one CUDA-event pair per call after an L2 flush (a buffer twice the L2 is
zeroed before each call), median of REPS calls. Prints, per configuration, each shape's
microseconds and % of the device's speed of light (harness/sol, default convention), and the
geometric mean; writes everything to OUT.json, one entry per (problem, configuration), plus the
best configuration per problem. A configuration that fails to compile, raises or fails the
check on a shape gets no geomean. --budget-s stops starting new configurations once spent, so
the gpu_check.sh step `tune_nvfp4` fits its 8 minutes.

    python3 scripts/tune_nvfp4.py OUT.json [--problems nvfp4_gemv,nvfp4_gemm] [--budget-s 420]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.contract.task_spec import load_task, shape_text
from harness.sol.breakdown import speed_of_light
from harness.sol.replay_clock import load_shipped

WARMUP, REPS = 3, 30

# problem -> (submission file, entry point taking (data, **config)); configurations after the default.
FILES = {
    "nvfp4_gemv": ("submissions/nvfp4_gemv/triton_gemv.py", "gemv"),
    "nvfp4_gemm": ("submissions/nvfp4_gemm/triton_gemm.py", "gemm"),
    "nvfp4_dual_gemm": ("submissions/nvfp4_dual_gemm/triton_dual_gemm.py", "dual_gemm"),
    "nvfp4_group_gemm": ("submissions/nvfp4_group_gemm/triton_group_gemm.py", "group_gemm"),
}
GRID: dict[str, list[dict[str, Any]]] = {
    "nvfp4_gemv": [
        {"split_k": 1},  # before the split over K
        {"per_sm": 3},
        {"per_sm": 12},
        {"per_sm": 24},
        {"prefetch": True},
        {"prefetch": True, "per_sm": 12},
        {"block_m": 16},
        {"block_m": 16, "per_sm": 12},
        {"block_m": 64, "num_warps": 8},
        {"blocks_per_step": 128, "num_warps": 8},
    ],
    "nvfp4_gemm": [
        {"num_stages": 4},
        {"block_k": 64, "num_stages": 4},
        {"block_n": 128, "num_warps": 8, "ctas_per_sm": 1},
        {"block_n": 128, "num_warps": 4, "ctas_per_sm": 1},
        {"ctas_per_sm": 3},
        {"block_m": 64, "block_n": 128, "num_warps": 8, "ctas_per_sm": 2},
        {"split_k": 1},
    ],
    "nvfp4_dual_gemm": [
        {"block_n": 64, "num_warps": 4, "ctas_per_sm": 2},
        {"block_n": 64, "num_warps": 4, "num_stages": 4, "ctas_per_sm": 2},
        {"block_k": 64, "num_stages": 4},
        {"block_m": 64, "block_n": 128, "num_warps": 8, "ctas_per_sm": 2},  # 128 registers (sm_90a, CPU)
        {"block_m": 64, "block_n": 64, "num_warps": 4, "ctas_per_sm": 3},
        {"split_k": 1},
    ],
    "nvfp4_group_gemm": [
        {"block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 4, "scale_words": False},  # old default
        {"block_n": 128, "num_warps": 8},
        {"num_stages": 4},
        {"block_m": 64, "block_n": 64},
        {"block_m": 256},
        {"block_k": 64, "num_stages": 4},
    ],
}


class Timer:
    """Median microseconds of a call: one CUDA-event pair per call, the L2 flushed before each."""

    def __init__(self) -> None:
        l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
        self.flush = torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device="cuda")

    def median_us(self, call: Callable[[], Any]) -> float:
        for _ in range(WARMUP):
            call()
        pairs = []
        for _ in range(REPS):
            self.flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in pairs) * 1e3


def run_config(entry: Callable, config: dict, shapes: list, reference: Any, timer: Timer) -> dict:
    """One configuration on every shape: checked first, then timed; None geomean on any failure."""
    rows = []
    for case, sol_us, data, expected in shapes:
        row: dict[str, Any] = {"shape": shape_text(case)}
        try:
            ok, message = reference.check_implementation(data, entry(data, **config), expected=expected)
            row.update(check=ok, message=message)
            if ok:
                us = timer.median_us(lambda data=data: entry(data, **config))
                row.update(us=round(us, 3), sol_us=round(sol_us, 3), pct_sol=round(100 * sol_us / us, 1))
        except Exception as error:  # a configuration that does not compile, fit or apply to a shape
            row.update(check=False, message=f"{type(error).__name__}: {str(error).splitlines()[0][:160]}")
        rows.append(row)
    ratios = [row["sol_us"] / row["us"] for row in rows if "us" in row]
    geomean = 100 * math.exp(statistics.fmean(map(math.log, ratios))) if len(ratios) == len(rows) else None
    return {"config": config, "shapes": rows, "geomean_pct_sol": None if geomean is None else round(geomean, 2)}


def tune_problem(problem: str, device: str, timer: Timer, deadline: float) -> dict:
    """Every configuration of one problem, the file's default (custom_kernel) first."""
    path, entry_name = FILES[problem]
    kernel = load_shipped(Path(path))
    entry = kernel.__globals__[entry_name]
    reference = importlib.import_module(f"problems.{problem}.reference")
    shapes = []
    for case in load_task(problem).benchmarks:
        data = reference.generate_input(**case, device="cuda")
        shapes.append((case, speed_of_light(problem, case, device) * 1e6, data, reference.ref_kernel(data)))
    results = []
    for config in [{}, *GRID[problem]]:
        if time.monotonic() > deadline:
            results.append({"config": config, "skipped": "time budget spent"})
            continue
        results.append(run_config(entry, config, shapes, reference, timer))
        cells = " ".join(
            f"{r['us']}us ({r['pct_sol']}%)" if "us" in r else f"FAIL({r['message'][:60]})"
            for r in results[-1]["shapes"]
        )
        name = json.dumps(config) if config else "default"
        print(f"{problem} {name}: {cells} geomean {results[-1]['geomean_pct_sol']}%", flush=True)
    ranked = [r for r in results if r.get("geomean_pct_sol") is not None]
    best = max(ranked, key=lambda r: r["geomean_pct_sol"]) if ranked else None
    return {"file": path, "configs": results, "best": best}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="JSON file to write")
    parser.add_argument("--problems", default=",".join(FILES), help="comma-separated subset of " + ",".join(FILES))
    parser.add_argument("--budget-s", type=float, default=420.0, help="no new configuration starts after this")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("tune_nvfp4: needs a CUDA GPU (run it through scripts/gpu_check.sh tune_nvfp4)", file=sys.stderr)
        return 2
    unknown = set(args.problems.split(",")) - set(FILES)
    if unknown:
        print(f"tune_nvfp4: unknown problem(s) {sorted(unknown)}: choose from {', '.join(FILES)}", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name()
    deadline = time.monotonic() + args.budget_s
    timer = Timer()
    report: dict[str, Any] = {"device": device, "warmup": WARMUP, "reps": REPS, "problems": {}}
    for problem in args.problems.split(","):
        report["problems"][problem] = tune_problem(problem, device, timer, deadline)
        best = report["problems"][problem]["best"]
        print(f"== {problem}: best {best and best['config']} at {best and best['geomean_pct_sol']}% of SOL", flush=True)
        args.out.write_text(json.dumps(report, indent=2))  # after every problem: a cut-short run keeps what ran
    return 0


if __name__ == "__main__":
    sys.exit(main())
