"""%globaltimer stamps from inside a CUDA graph: the replay clock's reading (GPU only).

A one-thread PTX kernel writes the GPU's %globaltimer (ns) to a slot of a device array; launched on
torch's current stream through the driver API, so it is captured as a kernel node like any other.
Beside it, an empty one-thread kernel: the floor both the replay clock and Nsight Compute read
(scripts/ncu_target.py --floors), so that the two clocks' costs of one empty launch can be compared;
and the hold: one thread spinning on %globaltimer for a given number of ns, which keeps the GPU busy
while the host queues the stream replay's groups behind it (harness.sol.replay_clock, ``stream=True``).
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
HOLD_NAME = "hold"
"""The spin kernel's name: it returns once %globaltimer has advanced by its parameter (ns) since it began."""
PTX = (
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    f".visible .entry {KERNEL_NAME}(.param .u64 slot)\n{{\n.reg .b64 %a, %t;\n"
    "ld.param.u64 %a, [slot];\nmov.u64 %t, %globaltimer;\nst.global.u64 [%a], %t;\nret;\n}\n"
    f".visible .entry {EMPTY_NAME}()\n{{\nret;\n}}\n"
    f".visible .entry {HOLD_NAME}(.param .u64 ns)\n{{\n.reg .b64 %n, %s, %t;\n.reg .pred %p;\n"
    "ld.param.u64 %n, [ns];\nmov.u64 %s, %globaltimer;\nadd.u64 %n, %n, %s;\n$Lspin:\n"
    "mov.u64 %t, %globaltimer;\nsetp.lt.u64 %p, %t, %n;\n@%p bra $Lspin;\nret;\n}\n"
)


class Stamper:
    """`mark(i)` queues a stamp into slot i on torch's current stream, `empty()` the empty kernel, `hold(ns)`
    the spin; `read()` the slots, in ns."""

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
        self._hold = self._entry(HOLD_NAME)
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

    def _launch_u64(self, function: ctypes.c_void_p, value: int) -> None:
        """Launches a kernel of one u64 parameter (the driver copies it at the launch)."""
        param = ctypes.c_uint64(value)
        self._launch(function, (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(param), ctypes.c_void_p)))

    def mark(self, index: int) -> None:
        self._launch_u64(self._function, self.slots.data_ptr() + 8 * index)

    def hold(self, ns: int) -> None:
        self._launch_u64(self._hold, ns)

    def empty(self) -> None:
        self._launch(self._empty, None)

    def read(self) -> list[int]:
        return [int(v) for v in self.slots.cpu().tolist()]
