"""What the problem tests share: the cases (every cpu test, ragged shapes, the smallest contest
tests), the problems' specs and modules, and the pieces of each data tuple.

``PROBLEMS`` are the four NVFP4 problems (``CASES``), ``FP8_PROBLEMS`` the two fp8 ones
(``FP8_CASES``; tests/test_fp8_problems.py and tests/test_fp8_checker.py)."""

from __future__ import annotations

import functools
import importlib
import re
from pathlib import Path

import pytest
import torch
import yaml
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ("nvfp4_gemv", "nvfp4_gemm", "nvfp4_dual_gemm", "nvfp4_group_gemm")
FP8_PROBLEMS = ("mxfp8_gemm", "fp8_blockwise_gemm")
FP4 = torch.float4_e2m1fn_x2
E4M3 = torch.float8_e4m3fn
MISMATCH = re.compile(r"(\d+) of (\d+) elements mismatch; worst at \((\d+, )*\d+,?\): got (\S+), expected (\S+)")


@functools.cache
def spec(name: str) -> dict:
    return yaml.safe_load((ROOT / "problems" / name / "task.yml").read_text())


@functools.cache
def problem(name: str):
    return importlib.import_module(f"problems.{name}.reference")


def flops(name: str, case: dict) -> int:
    if name == "nvfp4_gemv":
        return 2 * case["m"] * case["k"] * case["l"]
    if name == "nvfp4_group_gemm":
        return sum(2 * m * n * k for m, n, k in zip(case["m"], case["n"], case["k"]))
    return (4 if name == "nvfp4_dual_gemm" else 2) * case["m"] * case["n"] * case["k"] * case.get("l", 1)


# Shapes outside the contest's shape contract (task.yml shape_contract), which the harness's
# CPU checks must not hand to submissions: odd K-block counts, ragged rows, L > 1.
RAGGED = {
    "nvfp4_gemv": [{"m": 40, "k": 64, "l": 1, "seed": 7}, {"m": 130, "k": 192, "l": 3, "seed": 8}],
    "nvfp4_gemm": [{"m": 72, "n": 40, "k": 192, "l": 1, "seed": 7}, {"m": 130, "n": 136, "k": 256, "l": 2, "seed": 8}],
    "nvfp4_dual_gemm": [{"m": 72, "n": 40, "k": 192, "l": 1, "seed": 7},
                        {"m": 130, "n": 136, "k": 256, "l": 2, "seed": 8}],
    "nvfp4_group_gemm": [{"m": [40, 136], "n": [72, 24], "k": [192, 64], "g": 2, "seed": 7}],
    # K/32 = 3 (blocked scales padded in both directions), rows not a multiple of 128.
    "mxfp8_gemm": [{"m": 72, "n": 40, "k": 96, "seed": 7}],
    # K/128 = 3, N = 136: B's second 128-row scale block holds 8 rows.
    "fp8_blockwise_gemm": [{"m": 40, "n": 136, "k": 384, "seed": 7}],
}


def selected_cases(name: str) -> list[tuple[str, dict]]:
    contest = sorted(spec(name)["tests"], key=lambda case: flops(name, case))
    chosen = [("cpu", case) for case in spec(name)["cpu_tests"]] + [("ragged", case) for case in RAGGED[name]]
    chosen.append(("contest", contest[0]))
    batched = [case for case in contest if case.get("l", 1) > 1]
    if batched and batched[0] is not contest[0]:
        chosen.append(("contest", batched[0]))
    return chosen


def case_id(name: str, kind: str, case: dict) -> str:
    return f"{name}-{kind}-" + "-".join(str(v).replace(" ", "") for k, v in case.items() if k != "seed")


CASES = [
    pytest.param(name, case, id=case_id(name, kind, case)) for name in PROBLEMS for kind, case in selected_cases(name)
]
FP8_CASES = [
    pytest.param(name, case, id=case_id(name, kind, case))
    for name in FP8_PROBLEMS
    for kind, case in selected_cases(name)
]


def tolerance(name: str) -> tuple[float, float]:
    declared = spec(name)["tolerance"]
    return float(declared["atol"]), float(declared["rtol"])


def bits(t: torch.Tensor) -> torch.Tensor:
    """Reinterpret as same-width integers (works on any strides, NaN compares by bit pattern)."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def tensors_of(tree) -> list[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in tensors_of(item)]
    return []


def as_list(output) -> list[torch.Tensor]:
    return output if isinstance(output, list) else [output]


# --- the pieces of each problem's data tuple ---------------------------------------------------


def operands(name: str, data) -> list[tuple[list[tuple], torch.Tensor]]:
    """Per output: ([(data, scales, permuted), ...] operands, c); A first, then B (B1, B2)."""
    if name == "nvfp4_group_gemm":
        abc, scales, permuted, _ = data
        return [([(a, sfa, pa), (b, sfb, pb)], c) for (a, b, c), (sfa, sfb), (pa, pb) in zip(abc, scales, permuted)]
    if name == "nvfp4_dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, pa, pb1, pb2, c = data
        return [([(a, sfa, pa), (b1, sfb1, pb1), (b2, sfb2, pb2)], c)]
    a, b, sfa, sfb, pa, pb, c = data
    return [([(a, sfa, pa), (b, sfb, pb)], c)]


def expected_shapes(name: str, case: dict) -> list[tuple[list[int], int, int, int]]:
    """Per output: (rows of each operand, K, L, columns of C)."""
    if name == "nvfp4_group_gemm":
        return [([m, n], k, 1, n) for m, n, k in zip(case["m"], case["n"], case["k"])]
    m, k, l = case["m"], case["k"], case["l"]
    if name == "nvfp4_gemv":
        return [([m, 128], k, l, 1)]
    n = case["n"]
    return [([m, n, n] if name == "nvfp4_dual_gemm" else [m, n], k, l, n)]




class CpuTensorLog(TorchDispatchMode):
    """Records the size of every tensor an operation produces on the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        produced = out if isinstance(out, (list, tuple)) else [out]
        self.sizes += [t.numel() for t in produced if isinstance(t, torch.Tensor) and t.device.type == "cpu"]
        return out
