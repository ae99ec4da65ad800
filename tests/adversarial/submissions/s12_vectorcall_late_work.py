"""Issue 40, late work (native, ctypes): rewrite the vectorcall slot of a torch C function the core
calls to read the outputs (TensorBase.untyped_storage) so that it first finishes the call's work.
custom_kernel computes half of c; the rewritten entry point computes the other half when the core
reads the outputs. That used to happen after the end event, untimed: the call read half its time.
The core now reads every output's layout before it records the end event, so the second half is
timed with the first (passes at its twin's time)."""

import ctypes

import _honest
import torch

SIGNATURE = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
TARGET = torch._C.TensorBase.untyped_storage
SLOT = id(TARGET) + ctypes.c_ssize_t.from_address(id(type(TARGET)) + 56).value  # tp_vectorcall_offset
ORIGINAL = ctypes.PYFUNCTYPE(*SIGNATURE)(ctypes.c_void_p.from_address(SLOT).value)
pending = []


@ctypes.CFUNCTYPE(*SIGNATURE)
def finish_first(callable_, args, nargsf, kwnames):
    while pending:
        data = pending.pop()
        _honest.gemv_rows(data, _honest.halves(data)[1])
    return ORIGINAL(callable_, args, nargsf, kwnames)


ctypes.c_void_p.from_address(SLOT).value = ctypes.cast(finish_first, ctypes.c_void_p).value


def custom_kernel(data):
    _honest.gemv_rows(data, _honest.halves(data)[0])
    pending.append(data)
    return data[-1]
