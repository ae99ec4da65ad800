"""Issue 40, L2 warm (plain torch): while the core's queued sleep holds the caller's stream, a side
stream reads the call's inputs (a copy engine's copy and a kernel's reduction), so that they sit in
L2 when the start event comes; then the shipped Triton GEMV (its twin, s17) runs warm. The core
now flushes the L2 after the hold, in the same kernel, and no kernel of another stream runs during
it: the inputs arrive cold (passes at its twin's time)."""

import s17_honest_triton_twin as twin
import torch

side = {}


def custom_kernel(data):
    device = data[-1].device
    stream = side.setdefault(device, torch.cuda.Stream(device=device))
    with torch.cuda.stream(stream):
        for operand in data[:4]:
            raw = operand.view(torch.uint8)
            torch.empty_like(raw).copy_(raw)  # a copy engine's read
            raw.sum(dtype=torch.int32)        # a kernel's read
    return twin.custom_kernel(data)
