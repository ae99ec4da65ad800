"""MXFP8 GEMM: inputs, reference and check (built on ``reference/``)."""

from __future__ import annotations

import torch

from problems.shared import blockscaled as bs
from problems.shared.operand_formats import MXFP8
from reference.formats import round_to_bf16
from reference.layouts import to_blocked
from reference.ops import mxfp8_mm

DISTRIBUTION, TOLERANCE = bs.numerics(__file__)


def generate_input(m: int, n: int, k: int, seed: int, device: str | None = None) -> tuple:
    target = bs.target_device(device)
    specs = [bs.OperandSpec("a", m, k, fmt=MXFP8), bs.OperandSpec("b", n, k, fmt=MXFP8)]
    a, b = bs.random_operands(seed, specs, DISTRIBUTION, target)
    sfa, sfb = a.scale_matrix, b.scale_matrix
    c = bs.poisoned_output((m, n), None, target, torch.bfloat16)
    return (a.matrix, b.matrix, sfa, sfb, to_blocked(sfa), to_blocked(sfb), c)


def ref_kernel(data: tuple) -> torch.Tensor:
    a, b, sfa, sfb, _, _, _ = data
    return round_to_bf16(mxfp8_mm(a, sfa, b, sfb))


check_implementation = bs.make_checker(ref_kernel, TOLERANCE)
