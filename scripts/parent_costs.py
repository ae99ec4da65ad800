"""What a timed call costs the parent, piece by piece, on one benchmark shape per problem (GPU).

Per problem (its largest benchmark shape): generate_input (host time until it returns, and until
the GPU is done), ref_kernel, the whole check against a correct output (on the GPU, and as the
parent checks a call: the output a host tensor, the expected one kept), the SHA-256 of the
output bytes that the MAC check recomputes, and a torch.profiler table of one generate_input.
Used to find where issue 14's 10 ms per call goes; prints one JSON line per problem.

With ``--references`` (issue 33): every test and benchmark shape of the four NVFP4 problems, the
float64 decode beside the fused block kernel and CUDA's own choice (reference/ops.py: the int8 digits
where the shape fits them, else the block kernel): the draw, each reference's time, the whole check
with CUDA's choice, and whether the three expected outputs are bit-identical (they must be:
reference/block_kernel.py, reference/limb_product.py). Exit 1 if any shape differs.

    python3 scripts/parent_costs.py OUT.json [--references]
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from harness.contract.task_spec import contest_problems, load_task, shape_text
from reference import ops

REPEATS = 10
TEST_REPEATS = 3
"""Timed repeats on a test shape (the benchmark shapes take REPEATS)."""
NVFP4_PROBLEMS = ("nvfp4_gemv", "nvfp4_gemm", "nvfp4_dual_gemm", "nvfp4_group_gemm")


def median_ms(action: Callable[[int], object], synchronize: bool, repeats: int = REPEATS) -> float:
    """Median wall time of action(i) over ``repeats`` calls after two warm-ups."""
    times = []
    for index in range(repeats + 2):
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
    variants = reference_variants(data) if problem in ("nvfp4_gemv", "nvfp4_gemm") else {}
    host = output_bytes(expected)
    on_host = [t.cpu().pin_memory() for t in expected] if isinstance(expected, list) else expected.cpu().pin_memory()
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
        # as the parent checks a call: the output a host tensor (pinned: worker_link/output_reader.py)
        "check_host_output_ms": median_ms(lambda _: reference.check_implementation(data, on_host, expected=expected),
                                          synchronize=True),
        "output_bytes": len(host),
        "sha256_ms": median_ms(lambda _: hashlib.sha256(host).digest(), synchronize=False),
        "profile": profiler.key_averages().table(sort_by="cpu_time_total", row_limit=12),
        **variants,
    }


def reference_variants(data: tuple) -> dict:
    """The first product of an NVFP4 problem (A against its first B) three ways: the decode to
    float64 as shipped, exact bf16 operands with fp32 accumulation (mm out_dtype), and the decode
    alone; each one's time and the bf16 way's largest relative error against float64."""
    from reference.quantize import dequantize

    a, b, sfa, sfb = data[0], data[1], data[2], data[3]
    a0, b0, sfa0, sfb0 = a[..., 0], b[..., 0], sfa[..., 0], sfb[..., 0]
    rows_b = 1 if b0.shape[0] == 128 and a0.shape[0] != 128 else b0.shape[0]  # the GEMV's padded vector

    def decoded(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        return dequantize(a0, sfa0).to(dtype), dequantize(b0[:rows_b], sfb0[:rows_b]).to(dtype)

    def f64(_: int) -> torch.Tensor:
        x, y = decoded(torch.float64)
        return x @ y.T

    def bf16(_: int) -> torch.Tensor:
        x, y = decoded(torch.bfloat16)
        return torch.mm(x, y.T, out_dtype=torch.float32)

    exact, fast = f64(0), bf16(0).double()
    return {"product_f64_ms": median_ms(f64, True), "product_bf16_fp32acc_ms": median_ms(bf16, True),
            "decode_f32_ms": median_ms(lambda _: decoded(torch.float32), True),
            "bf16_max_rel_err": float(((fast - exact).abs() / exact.abs().clamp_min(1e-3)).max()),
            "bf16_max_abs_err": float((fast - exact).abs().max())}


@contextlib.contextmanager
def backend(name: str):
    """Every block_scaled_mm without a named backend takes ``name`` meanwhile."""
    picked = ops.pick_backend
    ops.pick_backend = lambda device, shape=None: name
    try:
        yield
    finally:
        ops.pick_backend = picked


def same_bits(x: object, y: object) -> bool:
    xs, ys = (v if isinstance(v, list) else [v] for v in (x, y))
    return len(xs) == len(ys) and all(torch.equal(a.view(torch.int16), b.view(torch.int16)) for a, b in zip(xs, ys))


def reference_row(reference: object, case: dict, repeats: int) -> dict:
    """One shape: the draw, the three references, the whole check, equality of their outputs."""
    data = reference.generate_input(**case, device="cuda")
    with backend("decode"):
        old = reference.ref_kernel(data)
        old_ms = median_ms(lambda _: reference.ref_kernel(data), True, repeats)
    with backend("blocks"):
        blocks = reference.ref_kernel(data)
        blocks_ms = median_ms(lambda _: reference.ref_kernel(data), True, repeats)
    chosen = reference.ref_kernel(data)
    chosen_ms = median_ms(lambda _: reference.ref_kernel(data), True, repeats)
    check_ms = median_ms(lambda _: reference.check_implementation(data, old), True, repeats)
    passed = reference.check_implementation(data, old)[0]
    draw_ms = median_ms(lambda i: reference.generate_input(**{**case, "seed": case["seed"] + i}, device="cuda"),
                        True, repeats)
    return {"shape": shape_text(case), "draw_ms": draw_ms, "decode_ms": old_ms, "blocks_ms": blocks_ms,
            "chosen_ms": chosen_ms, "check_ms": check_ms,
            "identical": same_bits(old, blocks) and same_bits(old, chosen), "old_output_passes": passed}


def reference_rows(problem: str) -> list[dict]:
    """Every test and benchmark shape of ``problem`` (reference_row), the GPU's memory freed between."""
    reference = importlib.import_module(f"problems.{problem}.reference")
    task = load_task(problem)
    rows = []
    for kind, cases in (("test", task.tests), ("benchmark", task.benchmarks)):
        for case in cases:
            row = reference_row(reference, case, REPEATS if kind == "benchmark" else TEST_REPEATS)
            rows.append({"problem": problem, "kind": kind, **row})
            torch.cuda.empty_cache()
    return rows


def references(out_path: str) -> int:
    rows = []
    for problem in NVFP4_PROBLEMS:
        for row in reference_rows(problem):
            rows.append(row)
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    Path(out_path).write_text(json.dumps(rows, indent=2))
    differing = [(row["problem"], row["shape"]) for row in rows if not (row["identical"] and row["old_output_passes"])]
    print(f"{len(rows)} shapes; block kernel and CUDA's choice identical to the float64 decode on all but "
          f"{differing}", flush=True)
    return 1 if differing else 0


def main() -> int:
    if "--references" in sys.argv[2:]:
        return references(sys.argv[1])
    rows = []
    for problem in contest_problems():  # the timing ladder has no operands to draw
        row = costs(problem)
        rows.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                          if k != "profile"}), flush=True)
        print(row["profile"], flush=True)
    Path(sys.argv[1]).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
