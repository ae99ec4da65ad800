"""DeepSeek-V3 / DeepGEMM blockwise fp8 GEMM: inputs, reference and check (built on ``reference/``)."""

from __future__ import annotations

import torch

from problems.shared import blockscaled as bs
from problems.shared.operand_formats import FP8_1X128, FP8_128X128
from reference.formats import round_to_bf16
from reference.ops import blockwise_fp8_mm

DISTRIBUTION, TOLERANCE = bs.numerics(__file__)


def generate_input(m: int, n: int, k: int, seed: int, device: str | None = None) -> tuple:
    target = bs.target_device(device)
    specs = [bs.OperandSpec("a", m, k, fmt=FP8_1X128), bs.OperandSpec("b", n, k, fmt=FP8_128X128)]
    a, b = bs.random_operands(seed, specs, DISTRIBUTION, target)
    # A's scales M-major, (M, K/128) with strides (1, M): what cuBLAS (torch._scaled_mm) and
    # DeepGEMM take; B's (ceil(N/128), K/128) row-major.
    sa = a.scale_matrix.t().contiguous().t()
    c = bs.poisoned_output((m, n), None, target, torch.bfloat16)
    return (a.matrix, b.matrix, sa, b.scale_matrix, c)


def ref_kernel(data: tuple) -> torch.Tensor:
    a, b, sa, sb, _ = data
    return round_to_bf16(blockwise_fp8_mm(a, sa, b, sb))


check_implementation = bs.make_checker(ref_kernel, TOLERANCE)
