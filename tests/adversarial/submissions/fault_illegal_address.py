"""Fault: a Triton kernel stores through a pointer 2 TiB past its buffer (an illegal memory access).

The CUDA context is lost; the worker must report a device failure and the next case gets a
fresh worker.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _store_far_away(ptr, offset):
    tl.store(ptr + offset, 1.0)


def custom_kernel(data):
    c = data[-1]
    _store_far_away[(1,)](c, 1 << 40)
    torch.cuda.synchronize()  # surface the fault inside the call
    return c
