"""Unmap the parent's device snapshot from the worker's process (issue 33): the core copies a GPU
call's outputs that leave the pipe into the snapshot, at an address only its hidden page holds. This
finds it as f01 does (asking the driver for the allocation of the snapshot's size, outward from its own
output) and unmaps it on the first call, so that the core's next copy into it meets no memory. The
core's copy fails and the run ends with the worker's own fault, named; no result is signed from memory
the parent does not share. It raises where it finds no snapshot."""

import ctypes

import _honest

from harness.contract.output_file import SNAPSHOT_BYTES

cuda = ctypes.CDLL("libcuda.so.1")
done = {"unmapped": False}


def unmap_snapshot(near: int, span: int = 1 << 40, step: int = 2 << 20) -> None:
    base, size = ctypes.c_ulonglong(), ctypes.c_size_t()
    start = near - near % step
    for distance in range(0, span, step):
        for address in (start + distance, start - distance - step):
            found = address > 0 and cuda.cuMemGetAddressRange_v2(
                ctypes.byref(base), ctypes.byref(size), ctypes.c_ulonglong(address)) == 0
            if found and size.value == SNAPSHOT_BYTES:
                result = cuda.cuMemUnmap(base, ctypes.c_size_t(SNAPSHOT_BYTES))
                if result != 0:
                    raise RuntimeError(f"cuMemUnmap of the snapshot refused ({result})")
                return
    raise RuntimeError("no device snapshot found near the outputs (row f04 expects one)")


def custom_kernel(data):
    c = _honest.gemm(data)
    if not done["unmapped"]:
        unmap_snapshot(c.data_ptr())
        done["unmapped"] = True
    return c
