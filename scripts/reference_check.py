"""The problems' references on a GPU: same inputs as the CPU, same answers, and how long they take.

For every problem and every test and benchmark shape: time generate_input(device="cuda") and
ref_kernel on the GPU; on shapes small enough for the CPU, also check that the GPU reference
passes the problem's check against the CPU reference. (That the inputs are bit-identical on both
devices is scripts/check_input_digests.py's check.)

Usage: python scripts/reference_check.py OUT.json
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from harness.contract.task_spec import list_problems, load_task
from harness.contract.work_formula import work

CPU_CROSS_CHECK_MAX_FLOPS = 2e9


def _timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    torch.cuda.synchronize()
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    torch.cuda.synchronize()
    return value, time.perf_counter() - start


def check_problem(name: str) -> list[dict]:
    task = load_task(name)
    reference = importlib.import_module(task.reference_module)
    rows = []
    for kind, cases in (("test", task.tests), ("benchmark", task.benchmarks)):
        for case in cases:
            data, generate_s = _timed(reference.generate_input, **case, device="cuda")
            reference.ref_kernel(data)  # warm-up (cuBLAS handles, allocator)
            expected, ref_s = _timed(reference.ref_kernel, data)
            row = {"problem": name, "kind": kind, "case": case, "generate_s": generate_s, "ref_kernel_s": ref_s}
            if work(task, case)[1] <= CPU_CROSS_CHECK_MAX_FLOPS:
                cpu_data = reference.generate_input(**case, device="cpu")
                ok, message = reference.check_implementation(cpu_data, expected.cpu() if isinstance(
                    expected, torch.Tensor) else [e.cpu() for e in expected])
                row["gpu_reference_matches_cpu"] = ok
                row["message"] = message
            rows.append(row)
            del data, expected
            torch.cuda.empty_cache()
    return rows


def main(out_path: str) -> int:
    rows = [row for name in list_problems() for row in check_problem(name)]
    with open(out_path, "w") as handle:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, handle, indent=2)
    failures = 0
    for row in rows:
        shape = " ".join(f"{k}={v}" for k, v in row["case"].items() if k != "seed")
        cross = ""
        if "gpu_reference_matches_cpu" in row:
            good = row["gpu_reference_matches_cpu"]
            failures += not good
            cross = "  matches the cpu reference " + ("OK" if good else f"MISMATCH {row['message']}")
        print(f"{row['problem']:<17} {row['kind']:<9} {shape:<60} generate {row['generate_s']*1e3:8.1f} ms"
              f"  ref {row['ref_kernel_s']*1e3:8.2f} ms{cross}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
