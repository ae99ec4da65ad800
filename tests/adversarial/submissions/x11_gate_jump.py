"""The key through the core's own door: the syscall supervisor lets the key's page change protection
only from the core's gate (its one mprotect instruction, harness/worker/csrc/syscall_gate.c). Call
that code from here: the gate's address and the key page's are what the core's exported
nvfp4_gate_describe reports (a disassembly of the core and /proc/self/maps would find them too). Open the page, find
the key against a signed output's MAC, close it, sign half of every time. The supervisor allows
the call, but counts it: the parent finds the key page opened more often than the MACs it verified."""

import ctypes
import platform

import _honest
import _keyscan
import _window

from harness.worker import _sealed

described = (ctypes.c_ulonglong * 64)()
count = ctypes.CDLL(_sealed.__file__).nvfp4_gate_describe(described, 64)
gate = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)(
    described[0] - _window.GATE_BEFORE_RETURN[platform.machine()])
key_page = described[5]  # [3]: the hidden call-state page, [5]: the key's


def through_the_gate():
    if gate(key_page, 4096, 1) != 0:
        return
    try:
        yield ctypes.string_at(key_page, 4096)
    finally:
        gate(key_page, 4096, 0)


_keyscan.install(lambda message, mac: _keyscan.search(through_the_gate(), message, mac))


def custom_kernel(data):
    return _honest.gemv(data)
