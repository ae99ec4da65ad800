"""Fault (GPU): a kernel that spins on a flag nobody sets; custom_kernel returns at once, so the host
hangs in the harness's own wait for the call's end (its last own line is the launch)."""

import torch
import triton
import triton.language as tl


@triton.jit
def spin(flag_ptr, out_ptr):
    value = tl.load(flag_ptr)
    while value == 0:
        value = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr, value)


def custom_kernel(data):
    flag = torch.zeros(1, dtype=torch.int32, device=data[0].device)
    spin[(1,)](flag, flag)  # LAUNCH: never ends
    return data[-1]
