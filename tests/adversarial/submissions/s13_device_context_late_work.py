"""Issue 40, late work (no native code): leave torch's default-device mode (DeviceContext) active and
replace the module global its __torch_function__ calls (torch.utils._device._device_constructors).
Every torch call then runs the replacement, the core's reads of the outputs included, after the
end event: custom_kernel returns c unfilled and the replacement fills it there. DeviceContext used
to be the one mode the core let through; now any active mode is refused."""

import _honest
import torch
import torch.utils._device as device_module
from torch.utils._device import DeviceContext

pending = []
constructors = device_module._device_constructors


def finish_then_constructors():
    while pending:
        _honest.gemv(pending.pop())
    return constructors()


device_module._device_constructors = finish_then_constructors


def custom_kernel(data):
    if torch._C._len_torch_function_stack() == 0:
        DeviceContext(data[-1].device).__enter__()
    pending.append(data)
    return data[-1]
