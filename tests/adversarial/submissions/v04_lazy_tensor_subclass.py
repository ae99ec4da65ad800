"""Cheat 4, lazy form: return c wrapped in a torch.Tensor subclass whose __torch_function__ does the
real work the first time anyone touches it, which is the harness reading the output after the
timer has stopped. The timed call itself costs nothing."""

import _honest
import torch

_pending = []


class LazyOutput(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        while _pending:
            with torch._C.DisableTorchFunctionSubclass():
                _honest.gemv(_pending.pop())
        return super().__torch_function__(func, types, args, kwargs or {})


def custom_kernel(data):
    _pending.append(data)
    return data[-1].as_subclass(LazyOutput)
