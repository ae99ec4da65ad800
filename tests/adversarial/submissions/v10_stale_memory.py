"""Cheat 10, stale memory: return torch.empty_like(c), hoping the allocator hands back the freed
expected output of an in-process reference. The reference runs in the parent: nothing to find."""

import torch


def custom_kernel(data):
    return torch.empty_like(data[-1])
