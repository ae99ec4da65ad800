"""Fault: asks for 1 PiB of GPU memory. torch raises OutOfMemoryError; the verdict is a device failure."""

import torch


def custom_kernel(data):
    c = data[-1]
    hoard = torch.empty(1 << 50, dtype=torch.uint8, device=c.device)
    return hoard
