"""%globaltimer stamps from inside a CUDA graph: the replay clock's second, event-free reading (GPU only).

A one-thread PTX kernel writes the GPU's %globaltimer (ns) to a slot of a device array; launched on
torch's current stream through the driver API, so it is captured as a kernel node like any other.
Loaded from PTX by the driver (ctypes to libcuda, which torch has already initialised): nothing to
compile on the host, and nothing of the harness's compiled core is used.
"""

from __future__ import annotations

import ctypes
from typing import Any

KERNEL_NAME = "stamp"
"""The kernel's name as profilers print it (a PTX entry: not mangled); scripts/ncu_target.py's marker."""
PTX = (
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    f".visible .entry {KERNEL_NAME}(.param .u64 slot)\n{{\n.reg .b64 %a, %t;\n"
    "ld.param.u64 %a, [slot];\nmov.u64 %t, %globaltimer;\nst.global.u64 [%a], %t;\nret;\n}\n"
)


class Stamper:
    """`mark(i)` queues a stamp into slot i on torch's current stream; `read()` the slots, in ns."""

    def __init__(self, slots: int) -> None:
        import torch

        torch.cuda.init()
        torch.cuda.synchronize()  # the runtime has made torch's (primary) context current on this thread
        self._cuda = ctypes.CDLL("libcuda.so.1")
        self._cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self._module, self._function = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self._cuda.cuModuleLoadData(ctypes.byref(self._module), ctypes.c_char_p(PTX.encode())),
                    "cuModuleLoadData of the stamp kernel")
        self._check(self._cuda.cuModuleGetFunction(ctypes.byref(self._function), self._module, KERNEL_NAME.encode()),
                    "cuModuleGetFunction")
        self.slots: Any = torch.zeros(slots, dtype=torch.int64, device="cuda")

    @staticmethod
    def _check(result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what} failed (CUresult {result})")

    def mark(self, index: int) -> None:
        import torch

        address = ctypes.c_uint64(self.slots.data_ptr() + 8 * index)
        params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(address), ctypes.c_void_p))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self._check(self._cuda.cuLaunchKernel(self._function, 1, 1, 1, 1, 1, 1, 0, stream, params, None),
                    "cuLaunchKernel of the stamp kernel")

    def read(self) -> list[int]:
        return [int(v) for v in self.slots.cpu().tolist()]
