"""Check and time the Triton baseline submissions on a GPU, over a few configurations each.

Run on the device from the repository root, e.g.
    python3 scripts/tune_triton.py --out "$OUT" --check --time --kernels gemv,gemm,dual_gemm,group_gemm

--check runs every test and benchmark case of task.yml through the submission's custom_kernel
(and the plain-Triton decode path on the first two test cases) against problems/<p>/reference.py.
--warm runs each configuration of SWEEPS once per test and benchmark case (compiles, checks, no
timing): several processes (--configs picks a subset) can warm the Triton cache in parallel
before one process times.
--time times each benchmark case for each configuration in SWEEPS with
triton.testing.do_bench (L2 flushed before every call, median) and prints microseconds and the
percentage of the Hopper speed of light: max(bytes / (0.96 * 3.35e12 B/s), flops / 989e12 FLOP/s),
with bytes and flops from task.yml. Results also go to <out>/tune.json.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOPPER_BYTES_PER_S = 0.96 * 3.35e12  # H100 SXM HBM3, 96% as in the contest's B200 formula
HOPPER_FLOPS = 989e12  # dense fp16 tensor-core rate at boost clock

# problem short name -> (problem folder, submission file, entry point)
KERNELS = {
    "gemv": ("nvfp4_gemv", "submissions/nvfp4_gemv/triton_gemv.py", "gemv"),
    "gemm": ("nvfp4_gemm", "submissions/nvfp4_gemm/triton_gemm.py", "gemm"),
    "dual_gemm": ("nvfp4_dual_gemm", "submissions/nvfp4_dual_gemm/triton_dual_gemm.py", "dual_gemm"),
    "group_gemm": ("nvfp4_group_gemm", "submissions/nvfp4_group_gemm/triton_group_gemm.py", "group_gemm"),
}

# Keyword arguments of each entry point; {} is the submission's default.
SWEEPS: dict[str, list[dict[str, Any]]] = {
    "gemv": [
        {},
        {"block_m": 16, "blocks_per_step": 64, "num_warps": 4},
        {"block_m": 16, "blocks_per_step": 64, "num_warps": 4, "prefetch": True},
        {"block_m": 8, "blocks_per_step": 128, "num_warps": 4},
        {"block_m": 8, "blocks_per_step": 256, "num_warps": 4},
        {"block_m": 16, "blocks_per_step": 128, "num_warps": 8},
        {"block_m": 32, "blocks_per_step": 64, "num_warps": 8},
        {"block_m": 64, "blocks_per_step": 64, "num_warps": 8},
    ],
    "gemm": [
        {},
        {"block_m": 128, "block_n": 256, "block_k": 64, "num_warps": 8, "num_stages": 4, "ctas_per_sm": 1},
        {"block_m": 64, "block_n": 256, "block_k": 64, "num_warps": 4, "num_stages": 4, "ctas_per_sm": 2},
        {"block_m": 64, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 4, "ctas_per_sm": 4},
        {"block_m": 128, "block_n": 128, "block_k": 128, "num_warps": 8, "num_stages": 3, "ctas_per_sm": 1},
        {"block_m": 32, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 4, "ctas_per_sm": 4},
        {"scale_words": False},
    ],
    "dual_gemm": [
        {},
        {"block_m": 64, "block_n": 64, "block_k": 64, "num_warps": 4, "num_stages": 4, "ctas_per_sm": 4},
        {"block_m": 64, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 4, "ctas_per_sm": 2},
        {"block_m": 128, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 3, "ctas_per_sm": 1},
        {"block_m": 32, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 4, "ctas_per_sm": 3},
    ],
    "group_gemm": [
        {},
        {"block_m": 64, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 4},
        {"block_m": 128, "block_n": 256, "block_k": 64, "num_warps": 8, "num_stages": 4},
        {"block_m": 64, "block_n": 256, "block_k": 64, "num_warps": 4, "num_stages": 4},
        {"block_m": 32, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 4},
    ],
}


def load_submission(problem: str, path: str) -> tuple[ModuleType, ModuleType, dict[str, Any]]:
    """(submission module, reference module, task.yml) with ``task`` importable as the contest has it."""
    sys.modules["task"] = importlib.import_module(f"problems.{problem}.task")
    reference = importlib.import_module(f"problems.{problem}.reference")
    spec = importlib.util.spec_from_file_location(f"triton_{problem}", ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = yaml.safe_load((ROOT / "problems" / problem / "task.yml").read_text())
    return module, reference, task


def speed_of_light_us(task: dict[str, Any], case: dict[str, Any]) -> float:
    """Hopper speed of light of one case from task.yml's bytes and flops expressions."""
    sol = task["speed_of_light"]

    def evaluate(names: dict[str, Any]) -> float:
        seconds_bytes = eval(sol["bytes"], {}, dict(names)) / HOPPER_BYTES_PER_S
        seconds_flops = eval(sol["flops"], {}, dict(names)) / HOPPER_FLOPS
        return max(seconds_bytes, seconds_flops)

    if sol.get("per_group"):
        return 1e6 * sum(evaluate({"m": m, "n": n, "k": k, "l": 1}) for m, n, k in zip(case["m"], case["n"], case["k"]))
    return 1e6 * evaluate(case)


def check(name: str, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every test and benchmark case through custom_kernel, the test cases also without PTX."""
    import torch

    problem, path, entry = KERNELS[name]
    module, reference, task = load_submission(problem, path)
    records = []
    cases = [("test", c) for c in task["tests"]] + [("benchmark", c) for c in task["benchmarks"]]
    for index, (kind, case) in enumerate(cases):
        args = {k: v for k, v in case.items()}
        paths = [("asm", {})] + ([("plain", {"use_asm": False})] if index < 2 else [])
        for label, kwargs in paths:
            started = time.time()
            try:
                data = reference.generate_input(**args, device="cuda")
                out = getattr(module, entry)(data, **kwargs)
                torch.cuda.synchronize()
                ok, message = reference.check_implementation(data, out)
            except Exception as error:  # a failure is a result here, not the end of the run
                ok, message = False, f"{type(error).__name__}: {error}"
                log(traceback.format_exc())
            records.append({"kernel": name, "kind": kind, "case": case, "path": label, "ok": ok, "message": message})
            log(f"{name} {kind} {label} {case}: {'PASS' if ok else 'FAIL'} {message} ({time.time() - started:.1f}s)")
    return records


def bench(
    name: str,
    log: Callable[[str], None],
    sweep: list[dict[str, Any]],
    timed: bool = True,
    with_tests: bool = False,
) -> list[dict[str, Any]]:
    """Median time of each benchmark case for each configuration, and its % of the speed of light.

    ``timed=False`` only compiles and checks (times are reported as 0); ``timed=True`` does not
    check (run --warm first); ``with_tests`` also checks every configuration on the test cases.
    """
    import torch
    import triton.testing

    problem, path, entry = KERNELS[name]
    module, reference, task = load_submission(problem, path)
    fn = getattr(module, entry)
    records = []
    inputs = [(case, reference.generate_input(**case, device="cuda")) for case in task["benchmarks"]]
    for config in sweep:
        if with_tests:
            for case in task["tests"]:
                try:
                    data = reference.generate_input(**case, device="cuda")
                    ok, message = reference.check_implementation(data, fn(data, **config))
                except Exception as error:
                    ok, message = False, f"{type(error).__name__}: {str(error)[:300]}"
                if not ok:
                    log(f"{name} {json.dumps(config)} test {case}: FAIL {message}")
                records.append({"kernel": name, "config": config, "case": case, "test": True, "ok": ok})
        times = []
        for case, data in inputs:
            sol_us = speed_of_light_us(task, case)
            try:
                out = fn(data, **config)
                torch.cuda.synchronize()
                # Timed runs rely on the --warm pass for correctness (the fp64 reference is slow).
                ok = True if timed else reference.check_implementation(data, out)[0]
                us = 0.0
                if timed:
                    median_ms = triton.testing.do_bench(
                        lambda data=data, config=config: fn(data, **config), warmup=25, rep=100, return_mode="median"
                    )
                    us = median_ms * 1e3
            except Exception as error:
                log(f"{name} {config} {case}: {type(error).__name__}: {str(error)[:300]}")
                ok, us = False, math.inf
            pct = 100.0 * sol_us / us if us > 0 else 0.0
            times.append(pct)
            records.append(
                {"kernel": name, "config": config, "case": case, "us": us, "sol_us": sol_us, "pct_sol": pct, "ok": ok}
            )
            log(
                f"{name:10s} {json.dumps(config):110s} {json.dumps(case)[:70]:70s} {us:9.2f} us "
                f"SOL {sol_us:8.2f} us {pct:5.1f}% {'ok' if ok else 'WRONG'}"
            )
        finite = [p for p in times if p > 0]
        geo = math.exp(sum(math.log(p) for p in finite) / len(finite)) if finite and len(finite) == len(times) else 0.0
        log(f"{name:10s} {json.dumps(config):110s} geomean {geo:5.1f}% of SOL")
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="folder for tune.log and tune.json")
    parser.add_argument("--check", action="store_true", help="check every test and benchmark case")
    parser.add_argument("--warm", action="store_true", help="compile and check each configuration, no timing")
    parser.add_argument("--time", action="store_true", help="time each configuration on the benchmark cases")
    parser.add_argument("--only-default", action="store_true", help="use only each submission's default config")
    parser.add_argument("--configs", default="", help="comma-separated indices into SWEEPS[kernel] (default: all)")
    parser.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated: " + ",".join(KERNELS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_file = (out / "tune.log").open("a")

    def log(line: str) -> None:
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    import torch
    import triton
    import triton.testing

    log(
        f"device {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__} "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}"
    )
    results: dict[str, Any] = {"check": [], "bench": [], "copy_tb_s": None}
    if args.time:
        # Reference ceiling: a 1 GiB device-to-device copy (bytes read + written per second).
        src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy_ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=100, return_mode="median")
        results["copy_tb_s"] = 2 * src.numel() / (copy_ms * 1e-3) / 1e12
        log(f"copy bandwidth {results['copy_tb_s']:.2f} TB/s (read + write)")
        del src, dst
    kernels = [k for k in args.kernels.split(",") if k]
    picked = [int(i) for i in args.configs.split(",") if i]

    def sweep_of(name: str) -> list[dict[str, Any]]:
        sweep = [{}] if args.only_default else SWEEPS[name]
        return [sweep[i] for i in picked if i < len(sweep)] if picked else sweep

    for name in kernels:
        if args.check:
            results["check"] += check(name, log)
        if args.warm:
            results["bench"] += bench(name, log, sweep_of(name), timed=False, with_tests=True)
    if args.time:
        for name in kernels:
            results["bench"] += bench(name, log, sweep_of(name))
    (out / "tune.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
