"""Cheat 5: replace torch.cuda.Event.elapsed_time at import so every call reads as 1 ns."""

import _honest
import torch

torch.cuda.Event.elapsed_time = lambda self, end_event: 1e-6


def custom_kernel(data):
    return _honest.gemv(data)
