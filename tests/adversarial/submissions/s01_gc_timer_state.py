"""Sealed class: walk gc.get_objects() to the timer and change its state (the measured event
overhead, the flush buffer): what made a Python timer report 25-40% less (issue 13)."""

import _honest
import _reach
import torch

for timer in _reach.instances("SealedTimer", "CudaTimer", "CpuTimer"):
    timer.overhead_us = 40.0
    if hasattr(timer, "_flush_buffer"):
        timer._flush_buffer = torch.empty(1, dtype=torch.uint8, device=timer._flush_buffer.device)


def custom_kernel(data):
    return _honest.gemv(data)
