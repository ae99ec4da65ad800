"""Cheat 4, lazy form: push a TorchFunctionMode that is never popped. custom_kernel only records
its inputs; the mode does the real work on the next torch call anyone makes, which is the
harness copying the output after the timer has stopped."""

import _honest
import torch
from torch.overrides import TorchFunctionMode

_pending = []


class FinishLater(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        while _pending:
            _honest.gemv(_pending.pop())  # the mode is off while its handler runs
        return func(*args, **(kwargs or {}))


_mode = FinishLater()


def custom_kernel(data):
    if torch._C._len_torch_function_stack() == 0:
        _mode.__enter__()
    _pending.append(data)
    return data[-1]
