#!POPCORN leaderboard timing_ladder
#!POPCORN author harness-baselines
"""The timing ladder's kernel: one Triton launch per call, its work known from (n, iters).

iters = 1: each element read once and written once (memory-bound). Large iters: a dependent
fused multiply-add chain per element, 16 warps a program so that every SM keeps 2048 threads
busy (compute-bound on the CUDA cores). The loop bound is a runtime argument: nothing folds it.
"""

import triton
import triton.language as tl
from task import input_t, output_t

BLOCK = 512
WARPS = 16


@triton.jit
def _ladder(x_ptr, y_ptr, n, iters, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(x_ptr + offsets, mask=mask)
    for _ in range(iters):
        y = y * 0.5 + 0.25
    tl.store(y_ptr + offsets, y, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x, y, iters = data
    n = x.numel()
    _ladder[(triton.cdiv(n, BLOCK),)](x, y, n, iters, BLOCK=BLOCK, num_warps=WARPS)
    return y
