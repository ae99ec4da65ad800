"""%globaltimer stamps from inside a CUDA graph: the replay clock's reading (GPU only).

A one-thread PTX kernel writes the GPU's %globaltimer (ns) to a slot of a device array; launched on
torch's current stream through the driver API, so it is captured as a kernel node like any other.
Beside it, an empty one-thread kernel: the floor both the replay clock and Nsight Compute read
(scripts/ncu_target.py --floors), so that the two clocks' costs of one empty launch can be compared.
Loaded from PTX by the driver (ctypes to libcuda, which torch has already initialised): nothing to
compile on the host, and nothing of the harness's compiled core is used.
"""

from __future__ import annotations

import ctypes
from typing import Any

KERNEL_NAME = "stamp"
"""The kernel's name as profilers print it (a PTX entry: not mangled); scripts/ncu_target.py's marker."""
EMPTY_NAME = "empty"
"""The empty kernel's name as profilers print it."""
PTX = (
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    f".visible .entry {KERNEL_NAME}(.param .u64 slot)\n{{\n.reg .b64 %a, %t;\n"
    "ld.param.u64 %a, [slot];\nmov.u64 %t, %globaltimer;\nst.global.u64 [%a], %t;\nret;\n}\n"
    f".visible .entry {EMPTY_NAME}()\n{{\nret;\n}}\n"
)


class Stamper:
    """`mark(i)` queues a stamp into slot i on torch's current stream, `empty()` the empty kernel; `read()`
    the slots, in ns."""

    def __init__(self, slots: int) -> None:
        import torch

        torch.cuda.init()
        torch.cuda.synchronize()  # the runtime has made torch's (primary) context current on this thread
        self._cuda = ctypes.CDLL("libcuda.so.1")
        self._cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self._module = ctypes.c_void_p()
        self._check(self._cuda.cuModuleLoadData(ctypes.byref(self._module), ctypes.c_char_p(PTX.encode())),
                    "cuModuleLoadData of the stamp kernel")
        self._function, self._empty = self._entry(KERNEL_NAME), self._entry(EMPTY_NAME)
        self.slots: Any = torch.zeros(slots, dtype=torch.int64, device="cuda")

    @staticmethod
    def _check(result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what} failed (CUresult {result})")

    def _entry(self, name: str) -> ctypes.c_void_p:
        function = ctypes.c_void_p()
        self._check(self._cuda.cuModuleGetFunction(ctypes.byref(function), self._module, name.encode()),
                    f"cuModuleGetFunction of {name}")
        return function

    def _launch(self, function: ctypes.c_void_p, params: Any) -> None:
        import torch

        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self._check(self._cuda.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, params, None),
                    "cuLaunchKernel of the stamp module")

    def mark(self, index: int) -> None:
        address = ctypes.c_uint64(self.slots.data_ptr() + 8 * index)
        self._launch(self._function, (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(address), ctypes.c_void_p)))

    def empty(self) -> None:
        self._launch(self._empty, None)

    def read(self) -> list[int]:
        return [int(v) for v in self.slots.cpu().tolist()]
