"""NVFP4 block-scaled GEMM: inputs, reference and check (built on ``reference/``)."""

from __future__ import annotations

import torch

from problems.shared import blockscaled as bs
from reference.ops import block_scaled_mm

DISTRIBUTION, TOLERANCE = bs.numerics(__file__)


def generate_input(m: int, n: int, k: int, l: int, seed: int, device: str | None = None) -> tuple:
    target = bs.target_device(device)
    specs = [bs.OperandSpec("a", m, k, l), bs.OperandSpec("b", n, k, l)]
    a, b = bs.random_operands(seed, specs, DISTRIBUTION, target, permuted=True)
    c = bs.poisoned_output((m, n), l, target)
    return (a.data, b.data, a.scales, b.scales, a.permuted, b.permuted, c)


def ref_kernel(data: tuple) -> torch.Tensor:
    a, b, sfa, sfb, _, _, _ = data
    return block_scaled_mm(a, sfa, b, sfb, rounded=torch.float16)


check_implementation = bs.make_checker(ref_kernel, TOLERANCE)
