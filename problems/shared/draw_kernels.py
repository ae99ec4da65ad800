"""Every Triton kernel an input draw launches, compiled ahead of the first draw (no CUDA context needed).

A draw runs the counter generator's two kernels (counter_rng) and, for the NVFP4 problems, the permute
kernel (permuted_scales). A worker compiles them before its file comes (harness/worker/compile_ahead.py)
and the install compiles them into the parent's cache (harness/kernel_cache.py): the first draw then
launches at once.
"""

from __future__ import annotations

from problems.shared import counter_rng, permuted_scales


def compile_all() -> list:
    """Each kernel compiled for the active Triton driver's target, with its launcher ([] without triton)."""
    return counter_rng.compile_kernels() + permuted_scales.compile_kernel()
