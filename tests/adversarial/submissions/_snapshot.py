"""What the device-snapshot attacks share (rows f01 on a GPU, f04): find the parent's device snapshot in
the worker's own address space, as native code would.

Not a submission (its name starts with an underscore). The snapshot's address lies only on the core's
hidden page, but the driver answers for any address: asked at 2 MiB steps outward from a tensor of the
submission's own, it names the allocation of the snapshot's size.
"""

import ctypes
import functools

from harness.contract.output_file import SNAPSHOT_BYTES


@functools.cache
def driver() -> ctypes.CDLL:
    """libcuda, loaded on first use (a CPU run of a row that imports this never loads it)."""
    return ctypes.CDLL("libcuda.so.1")


def find(near: int, span: int = 1 << 40, step: int = 2 << 20) -> int:
    """The snapshot's base address, up to ``span`` either side of ``near`` (a million driver queries at
    most); raises where there is none, so that a harness without one shows as the row's mismatch."""
    base, size = ctypes.c_ulonglong(), ctypes.c_size_t()
    start = near - near % step
    for distance in range(0, span, step):
        for address in (start + distance, start - distance - step):
            found = address > 0 and driver().cuMemGetAddressRange_v2(
                ctypes.byref(base), ctypes.byref(size), ctypes.c_ulonglong(address)) == 0
            if found and size.value == SNAPSHOT_BYTES:  # the parent's size (a multiple of the granularity)
                return base.value
    raise RuntimeError("no device snapshot found near the outputs")
