"""Write the core's sealed pages without mprotect: process_vm_writev into this very process reaches
memory the mappings' protection (and mseal) would refuse a plain store. The core's first page (found
by its file in /proc/self/maps) is rewritten with its own bytes; the syscall supervisor refuses the
call (rule 'process_vm')."""

import ctypes
import os
from pathlib import Path

import _honest
import _native


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


scratch = ctypes.create_string_buffer(64)  # where there is no core: the syscall alone
core = next((int(line.split("-")[0], 16) for line in Path("/proc/self/maps").read_text().splitlines()
             if "_sealed" in line), ctypes.addressof(scratch))
same = ctypes.create_string_buffer(ctypes.string_at(core, 64), 64)
local, remote = Iovec(ctypes.addressof(same), 64), Iovec(core, 64)
_native.LIBC.process_vm_writev.restype = ctypes.c_ssize_t
written = _native.LIBC.process_vm_writev(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("process_vm_writev:", written if written >= 0 else "refused: " + _native.errno_text())


def custom_kernel(data):
    return _honest.gemv(data)
