"""Sweep the four NVFP4 Triton baselines' configurations on each benchmark shape (GPU): % of SOL.

For every problem (GEMV, GEMM, dual GEMM, grouped GEMM) and each configuration of GRID (the
file's own default first): on every benchmark shape of task.yml, the output of one call is
checked against the problem's reference (expected output computed once per shape), then the
call is timed by the replay clock (harness/sol/replay_clock.py, used as a library): POOL input
sets, each call behind a reading L2 flush, captured in one CUDA graph and timed inside it by
%globaltimer stamp kernels. The Python wrapper runs while the graph is
captured, never while it replays, so its host time cannot enter a reading: the clock this
replaced (an event pair around each eager call) read the GEMM's 29 us shape as 75 us and the
GEMV's 19 us shape as 46 us (H100, 2026-11-26). Ranked by the stamps (``us``; the clock that
agreed with the harness within max(3%, 0.2 us) on every timing-ladder rung that day), their p10
and p90 beside them. Work a wrapper caches across calls on the same tensors (the
grouped GEMM's per-group table) is done before capture and is in no reading; the harness, whose
inputs are fresh every call, pays it. Prints, per configuration, each shape's microseconds and %
of the device's speed of light (harness/sol, default convention), and the geometric mean; writes
everything to OUT.json, one entry per (problem, configuration), plus the best configuration per
problem. A configuration that fails to compile, raises, fails the check or reads no positive time
on a shape gets no geomean. --budget-s stops starting new configurations once spent, so the
gpu_check.sh step `tune_nvfp4` fits its 8 minutes.

    python3 scripts/tune_nvfp4.py OUT.json [--problems nvfp4_gemv,nvfp4_gemm] [--budget-s 420]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch

from harness.contract.task_spec import load_task, shape_text
from harness.sol import replay_clock
from harness.sol.breakdown import speed_of_light
from harness.sol.replay_clock import Reading, ReplayClock, load_shipped

# problem -> (submission file, entry point taking (data, **config)); configurations after the default.
FILES = {
    "nvfp4_gemv": ("submissions/nvfp4_gemv/triton_gemv.py", "gemv"),
    "nvfp4_gemm": ("submissions/nvfp4_gemm/triton_gemm.py", "gemm"),
    "nvfp4_dual_gemm": ("submissions/nvfp4_dual_gemm/triton_dual_gemm.py", "dual_gemm"),
    "nvfp4_group_gemm": ("submissions/nvfp4_group_gemm/triton_group_gemm.py", "group_gemm"),
}
GRID: dict[str, list[dict[str, Any]]] = {
    "nvfp4_gemv": [
        # The split over K (issue 37): picked per shape by per_sm (0), or fixed.
        {"split_k": 0},
        {"split_k": 0, "per_sm": 12},
        {"split_k": 0, "per_sm": 12, "prefetch": True},
        # The unsplit kernel's own knobs around its default (BM 32, NB 64, 4 warps, 1 stage).
        {"block_m": 16},
        {"block_m": 64},
        {"block_m": 64, "num_warps": 8},
        {"blocks_per_step": 32},
        {"blocks_per_step": 128},
        {"blocks_per_step": 128, "num_warps": 8},
        {"num_warps": 2},
        {"num_warps": 8},
        {"num_stages": 2},
        {"prefetch": True},
        {"prefetch": True, "block_m": 16},
        # A register cap (Triton's maxnreg) for more programs an SM lost on the H200 (run 46 call 8: 64 registers
        # 45.3%, 80 54.4%, BM 64 at 128 66.8%, against the default's 70.4%)
    ],
    # Around the defaults of 2026-11-27 (issue 37: B decoded straight into wgmma's register layout).
    "nvfp4_gemm": [  # default: BN 64, BK 128, 4 warps, 3 stages, two programs an SM
        {"split_k": 2},
        {"block_n": 128, "num_warps": 8, "ctas_per_sm": 1},
        {"num_stages": 2},
        # Lost on the H200 (run 46 call 2, geomean % of SOL against the default's 44.5): split 3 (33.5); BN 128 on
        # 4 warps, two m64 wgmmas a step and half of A's reads from L2, in 2 stages (29.7), in 3 at one program an
        # SM (35.7), at BK 64 (25.3, 25.0 in 4 stages); BK 64 in 4 stages (30.0)
        # Alternate K steps into two accumulators (two dots in flight): lost or tied on every shape
        # (run 36, docs/baselines.md)
    ],
    "nvfp4_dual_gemm": [  # default: BN 64, BK 128, 4 warps, 2 stages, two programs an SM
        {"ctas_per_sm": 1},
        {"block_n": 128, "num_warps": 8, "ctas_per_sm": 1, "num_stages": 3},
    ],
    "nvfp4_group_gemm": [  # default: BM 128, BN 64, BK 128, 4 warps, 3 stages, scales as bytes
        {"block_n": 128, "num_warps": 8},
        {"scale_words": True},
        {"num_stages": 4},
        # Narrower A tiles (BM 64, 32: run 29) and wider ones (BM 256, a group of up to 256 rows in one tile: run 35)
        # lost on every shape (docs/baselines.md)
    ],
}


class Clock(Protocol):
    """What the tune needs of a clock: ReplayClock's ``time`` (tests pass one on a simulated GPU)."""

    def time(self, kernel: Callable[[Any], Any], inputs: list[Any]) -> Reading: ...


def new_clock(flush: Callable[[], Any] | None = None) -> ReplayClock:
    """The tune's clock: the replay clock (``flush`` None: its reading flush of twice the L2)."""
    return ReplayClock(flush)


def geomean_pct(rows: list[dict[str, Any]]) -> float | None:
    """Geometric mean of SOL / time in %, or None unless every shape has a positive time."""
    ratios = [row["sol_us"] / row["us"] for row in rows if row.get("check") and row.get("us", 0) > 0]
    return round(100 * math.exp(statistics.fmean(map(math.log, ratios))), 2) if len(ratios) == len(rows) else None


def run_config(entry: Callable, config: dict, shapes: list, reference: Any, clock: Clock) -> dict:
    """One configuration on every shape: checked first (on the first input set), then timed on all."""
    rows = []
    for case, sol_us, inputs, expected in shapes:
        row: dict[str, Any] = {"shape": shape_text(case)}
        try:
            ok, message = reference.check_implementation(inputs[0], entry(inputs[0], **config), expected=expected)
            row.update(check=ok, message=message)
            if ok:
                reading = clock.time(lambda data: entry(data, **config), inputs)
                row.update(us=round(reading.us, 3), p10_us=round(reading.p10_us, 3),
                           p90_us=round(reading.p90_us, 3), calls=reading.calls, sol_us=round(sol_us, 3))
                if reading.us > 0:
                    row["pct_sol"] = round(100 * sol_us / reading.us, 1)
                else:
                    row.update(check=False, message=f"the stamps read {reading.us:.3f} us: no time to rank")
        except Exception as error:  # a configuration that does not compile, fit, capture or apply to a shape
            row.update(check=False, message=f"{type(error).__name__}: {str(error).splitlines()[0][:160]}")
        rows.append(row)
    return {"config": config, "shapes": rows, "geomean_pct_sol": geomean_pct(rows)}


def tune_problem(problem: str, device: str, clock: Clock, deadline: float) -> dict:
    """Every configuration of one problem, the file's default (custom_kernel) first."""
    path, entry_name = FILES[problem]
    kernel = load_shipped(Path(path))
    entry = kernel.__globals__[entry_name]
    reference = importlib.import_module(f"problems.{problem}.reference")
    shapes = []
    for case in load_task(problem).benchmarks:
        inputs = replay_clock.shape_inputs(problem, case)
        shapes.append((case, speed_of_light(problem, case, device) * 1e6, inputs, reference.ref_kernel(inputs[0])))
    results = []
    for config in [{}, *GRID[problem]]:
        if time.monotonic() > deadline:
            results.append({"config": config, "skipped": "time budget spent"})
            continue
        results.append(run_config(entry, config, shapes, reference, clock))
        cells = " ".join(
            f"{r['us']}us ({r['pct_sol']}%, p10-p90 {r['p10_us']}-{r['p90_us']})" if r.get("check") and "us" in r
            else f"FAIL({r['message'][:60]})"
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
    clock = new_clock()
    floors = clock.floors()
    print(f"replay clock floors (us): {floors}", flush=True)
    report: dict[str, Any] = {
        "device": device,
        "clock": "replay: us = %globaltimer stamps (trimmed mean, floor off), p10_us and p90_us their spread",
        "calls_per_shape": replay_clock.GROUPS * replay_clock.REPLAYS,
        "floors_us": dataclasses.asdict(floors),
        "problems": {},
    }
    for problem in args.problems.split(","):
        report["problems"][problem] = tune_problem(problem, device, clock, deadline)
        best = report["problems"][problem]["best"]
        print(f"== {problem}: best {best and best['config']} at {best and best['geomean_pct_sol']}% of SOL", flush=True)
        args.out.write_text(json.dumps(report, indent=2))  # after every problem: a cut-short run keeps what ran
    return 0


if __name__ == "__main__":
    sys.exit(main())
