"""The timing ladder: known work in known amounts, so a timing method can be held against others.

y = x, then ``iters`` times y = 0.5 * y + 0.25. The expected output is the closed form
0.5**iters * x + 0.5 * (1 - 0.5**iters), in float64, so the check does not repeat the chain.
"""

from __future__ import annotations

import torch

from problems.shared.blockscaled import Tolerance, compare_outputs, read_task_yaml, target_device
from problems.shared.counter_rng import random_words

_spec = read_task_yaml(__file__)
TOLERANCE = Tolerance(float(_spec["tolerance"]["rtol"]), float(_spec["tolerance"]["atol"]))
GRID = 2.0**-23


def generate_input(n: int, iters: int, seed: int, device: str | None = None) -> tuple:
    """x uniform on the 2**-23 grid in [-1, 1) (24 bits of a word: exact in fp32), y NaN."""
    target = target_device(device)
    (words,) = random_words(seed, [("x", n)], target)
    x = (words & 0xFFFFFF).to(torch.float32) * GRID - 1.0
    y = torch.full((n,), float("nan"), dtype=torch.float32, device=target)
    return (x, y, iters)


def ref_kernel(data: tuple) -> torch.Tensor:
    x, _, iters = data
    decay = 0.5**iters
    return (decay * x.double() + 0.5 * (1.0 - decay)).to(torch.float32)


def check_implementation(data: tuple, output: torch.Tensor, expected: torch.Tensor | None = None) -> tuple[bool, str]:
    return compare_outputs(output, ref_kernel(data) if expected is None else expected, TOLERANCE)
