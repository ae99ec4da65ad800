"""Fault (GPU): a kernel that spins on a flag nobody sets, and a host that waits for it. The report
must name the synchronize line, and the run stop at the test's limit (scripts/hang_probe.sh)."""

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
    spin[(1,)](flag, flag)
    torch.cuda.synchronize()  # HANGS HERE: the host waits for a kernel that never ends
    return data[-1]
