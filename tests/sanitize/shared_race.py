#!POPCORN leaderboard nvfp4_gemv
#!POPCORN author planted-defects
"""Planted defect: threads read a neighbour warp's shared-memory slot with no barrier (racecheck)."""

import torch
from _planted import compile_kernel, correct_output

SOURCE = r"""
extern "C" __global__ void shared_race(float* out) {
    __shared__ float slots[256];
    slots[threadIdx.x] = (float)threadIdx.x;
    // missing __syncthreads(): the slot 32 threads on belongs to another warp
    out[threadIdx.x] = slots[(threadIdx.x + 32) % 256];
}
"""
_kernel = None


def custom_kernel(data):
    global _kernel
    c = correct_output(data)
    scratch = torch.zeros(256, dtype=torch.float32, device=c.device)
    _kernel = _kernel or compile_kernel(SOURCE, "shared_race")
    _kernel(grid=(1, 1, 1), block=(256, 1, 1), args=[scratch])
    return c
