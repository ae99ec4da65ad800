#!POPCORN leaderboard nvfp4_gemv
#!POPCORN author planted-defects
"""Planted defect: a kernel reads a global buffer that nothing ever wrote (initcheck)."""

import torch
from _planted import compile_kernel, correct_output

SOURCE = r"""
extern "C" __global__ void read_unwritten(const float* never_written, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = never_written[i] * 2.0f;
}
"""
_kernel = None


def custom_kernel(data):
    global _kernel
    c = correct_output(data)
    never_written = torch.empty(256, dtype=torch.float32, device=c.device)
    out = torch.zeros(256, dtype=torch.float32, device=c.device)
    _kernel = _kernel or compile_kernel(SOURCE, "read_unwritten")
    _kernel(grid=(1, 1, 1), block=(256, 1, 1), args=[never_written, out, 256])
    return c
