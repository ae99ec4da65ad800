"""Cheat 5 (and 4): patch torch.Tensor.clone so that the work happens when the harness copies the
output after the timer stopped; custom_kernel itself only records its inputs."""

import _honest
import torch

_clone = torch.Tensor.clone
_pending = []


def _finishing_clone(self, *args, **kwargs):
    while _pending:
        _honest.gemv(_pending.pop())
    return _clone(self, *args, **kwargs)


def custom_kernel(data):
    torch.Tensor.clone = _finishing_clone
    _pending.append(data)
    return data[-1]
