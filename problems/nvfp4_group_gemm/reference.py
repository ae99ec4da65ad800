"""NVFP4 grouped GEMM (G block-scaled GEMMs of different sizes): inputs, reference and check."""

from __future__ import annotations

import torch

from problems.shared import blockscaled as bs
from reference.ops import block_scaled_mm

DISTRIBUTION, TOLERANCE = bs.numerics(__file__)


def generate_input(m: list[int], n: list[int], k: list[int], g: int, seed: int, device: str | None = None) -> tuple:
    if not len(m) == len(n) == len(k) == g:
        raise ValueError(f"g={g} groups need g values of m, n and k; got {len(m)}, {len(n)}, {len(k)}")
    target = bs.target_device(device)
    specs = []
    for group, (rows_a, rows_b, depth) in enumerate(zip(m, n, k)):
        specs += [bs.OperandSpec(f"a[{group}]", rows_a, depth, 1), bs.OperandSpec(f"b[{group}]", rows_b, depth, 1)]
    drawn = bs.random_operands(seed, specs, DISTRIBUTION, target, permuted=True)
    pairs = list(zip(drawn[0::2], drawn[1::2]))
    outputs = [bs.poisoned_output((rows_a, rows_b), 1, target) for rows_a, rows_b in zip(m, n)]
    abc = [(a.data, b.data, c) for (a, b), c in zip(pairs, outputs)]
    scales = [(a.scales, b.scales) for a, b in pairs]
    permuted = [(a.permuted, b.permuted) for a, b in pairs]
    sizes = [(int(rows_a), int(rows_b), int(depth), 1) for rows_a, rows_b, depth in zip(m, n, k)]
    return (abc, scales, permuted, sizes)


def ref_kernel(data: tuple) -> list[torch.Tensor]:
    abc, scales, _, _ = data
    return [block_scaled_mm(a, sfa, b, sfb, rounded=torch.float16) for (a, b, _), (sfa, sfb) in zip(abc, scales)]


check_implementation = bs.make_checker(ref_kernel, TOLERANCE)
