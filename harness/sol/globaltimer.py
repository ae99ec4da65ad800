"""%globaltimer stamps from inside a CUDA graph: the replay clock's reading (GPU only).

A one-thread PTX kernel writes the GPU's %globaltimer (ns) to a slot of a device array; launched on
torch's current stream through the driver API, so it is captured as a kernel node like any other.
Beside it, an empty one-thread kernel: the floor both the replay clock and Nsight Compute read
(scripts/ncu_target.py --floors), so that the two clocks' costs of one empty launch can be compared;
and the hold: one thread spinning on %globaltimer for a given number of ns, which keeps the GPU busy
while the host queues the stream replay's groups behind it (harness.sol.replay_clock, ``stream=True``).
Loaded from PTX by the driver (harness.contract.ptx_module): nothing to compile on the host, and
nothing of the harness's compiled core is used.
"""

from __future__ import annotations

from typing import Any

from harness.contract.ptx_module import PtxModule

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

        self._module = PtxModule(PTX)
        self.slots: Any = torch.zeros(slots, dtype=torch.int64, device="cuda")

    def mark(self, index: int) -> None:
        self._module.launch(KERNEL_NAME, [self.slots.data_ptr() + 8 * index])

    def hold(self, ns: int) -> None:
        self._module.launch(HOLD_NAME, [ns])

    def empty(self) -> None:
        self._module.launch(EMPTY_NAME)

    def read(self) -> list[int]:
        return [int(v) for v in self.slots.cpu().tolist()]
