"""NVFP4 batched GEMV: inputs, reference and check (built on ``reference/``)."""

from __future__ import annotations

import torch

from problems.shared import blockscaled as bs
from reference.ops import block_scaled_mm

DISTRIBUTION, TOLERANCE = bs.numerics(__file__)

VECTOR_PAD_ROWS = 128
"""The contest pads the vector to 128 rows of random data; only row 0 is used."""


def generate_input(m: int, k: int, l: int, seed: int, device: str | None = None) -> tuple:
    target = bs.target_device(device)
    specs = [bs.OperandSpec("a", m, k, l), bs.OperandSpec("b", VECTOR_PAD_ROWS, k, l)]
    a, b = bs.random_operands(seed, specs, DISTRIBUTION, target, permuted=True)
    c = bs.poisoned_output((m, 1), l, target)
    return (a.data, b.data, a.scales, b.scales, a.permuted, b.permuted, c)


def ref_kernel(data: tuple) -> torch.Tensor:
    a, b, sfa, sfb, _, _, _ = data
    return block_scaled_mm(a, sfa, b[:1], sfb[:1], rounded=torch.float16)


check_implementation = bs.make_checker(ref_kernel, TOLERANCE)
