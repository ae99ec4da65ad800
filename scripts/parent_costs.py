"""What a timed call costs the parent, piece by piece, on one benchmark shape per problem (GPU).

Per problem (its largest benchmark shape): generate_input (host time until it returns, and until
the GPU is done), ref_kernel, the whole check against a correct output, the SHA-256 of the
output bytes that the MAC check recomputes, and a torch.profiler table of one generate_input.
Used to find where issue 14's 10 ms per call goes; prints one JSON line per problem.

    python3 scripts/parent_costs.py OUT.json
"""

from __future__ import annotations

import hashlib
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from harness.contract.task_spec import list_problems, load_task, shape_text

REPEATS = 10


def median_ms(action: Callable[[int], object], synchronize: bool) -> float:
    """Median wall time of action(i) over REPEATS calls after two warm-ups."""
    times = []
    for index in range(REPEATS + 2):
        torch.cuda.synchronize()
        started = time.perf_counter()
        action(index)
        if synchronize:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times[2:])


def output_bytes(output: object) -> bytes:
    tensors = output if isinstance(output, list) else [output]
    return b"".join(t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes() for t in tensors)


def largest(problem: str) -> dict:
    """The benchmark shape with the most operand elements ((m + n) * k * l, summed over groups)."""
    def size(case: dict) -> int:
        groups = case["m"] if isinstance(case["m"], list) else [case["m"]]
        ns = case.get("n", 1)
        ns = ns if isinstance(ns, list) else [ns] * len(groups)
        ks = case["k"] if isinstance(case["k"], list) else [case["k"]] * len(groups)
        return sum((m + n) * k for m, n, k in zip(groups, ns, ks)) * case.get("l", 1)

    return max(load_task(problem).benchmarks, key=size)


def costs(problem: str) -> dict:
    """One problem's largest benchmark shape, piece by piece (and a profile of one draw)."""
    reference = importlib.import_module(f"problems.{problem}.reference")
    case = largest(problem)

    def draw(index: int) -> object:
        return reference.generate_input(**{**case, "seed": case["seed"] + index}, device="cuda")

    data = draw(0)
    expected = reference.ref_kernel(data)
    host = output_bytes(expected)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as profiler:
        draw(99)
        torch.cuda.synchronize()
    return {
        "problem": problem, "shape": shape_text(case),
        "generate_host_ms": median_ms(draw, synchronize=False),
        "generate_ms": median_ms(draw, synchronize=True),
        "ref_kernel_ms": median_ms(lambda _: reference.ref_kernel(data), synchronize=True),
        "check_ms": median_ms(lambda _: reference.check_implementation(data, expected), synchronize=True),
        "output_bytes": len(host),
        "sha256_ms": median_ms(lambda _: hashlib.sha256(host).digest(), synchronize=False),
        "profile": profiler.key_averages().table(sort_by="cpu_time_total", row_limit=12),
    }


def main() -> int:
    rows = []
    for problem in list_problems():
        row = costs(problem)
        rows.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                          if k != "profile"}), flush=True)
        print(row["profile"], flush=True)
    Path(sys.argv[1]).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
