#!POPCORN leaderboard nvfp4_gemv
#!POPCORN author planted-defects
"""Planted defect: __syncthreads() reached by only half of a block (synccheck)."""

import torch
from _planted import compile_kernel, correct_output

SOURCE = r"""
extern "C" __global__ void divergent_barrier(float* out) {
    __shared__ float slots[64];
    slots[threadIdx.x] = (float)threadIdx.x;
    if (threadIdx.x < 16) __syncthreads();  // the other 48 threads never arrive
    out[threadIdx.x] = slots[threadIdx.x];
}
"""
_kernel = None


def custom_kernel(data):
    global _kernel
    c = correct_output(data)
    scratch = torch.zeros(64, dtype=torch.float32, device=c.device)
    _kernel = _kernel or compile_kernel(SOURCE, "divergent_barrier")
    _kernel(grid=(1, 1, 1), block=(64, 1, 1), args=[scratch])
    return c
