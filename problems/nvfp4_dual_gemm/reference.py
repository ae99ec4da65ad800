"""NVFP4 gated dual GEMM, silu(A @ B1^T) * (A @ B2^T): inputs, reference and check."""

from __future__ import annotations

import torch

from problems.shared import blockscaled as bs
from reference.formats import round_to_fp16
from reference.ops import block_scaled_mm, silu_mul

DISTRIBUTION, TOLERANCE = bs.numerics(__file__)


def generate_input(m: int, n: int, k: int, l: int, seed: int, device: str | None = None) -> tuple:
    target = bs.target_device(device)
    specs = [bs.OperandSpec("a", m, k, l), bs.OperandSpec("b1", n, k, l), bs.OperandSpec("b2", n, k, l)]
    a, b1, b2 = bs.random_operands(seed, specs, DISTRIBUTION, target, permuted=True)
    c = bs.poisoned_output((m, n), l, target)
    return (a.data, b1.data, b2.data, a.scales, b1.scales, b2.scales, a.permuted, b1.permuted, b2.permuted, c)


def ref_kernel(data: tuple) -> torch.Tensor:
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, _ = data
    gate = block_scaled_mm(a, sfa, b1, sfb1)
    up = block_scaled_mm(a, sfa, b2, sfb2)
    return round_to_fp16(silu_mul(gate, up))


check_implementation = bs.make_checker(ref_kernel, TOLERANCE)
