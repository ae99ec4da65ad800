"""Rewrite an output in the parent's device snapshot after the core signed it (issue 33, branch
device-snapshot): the core copies a GPU call's outputs into device memory the parent exported, which
the worker's process has mapped. The snapshot's address lies only on the core's hidden page, so this
finds it as native code would: by asking the driver, at 2 MiB steps outward from its own tensors, for the
allocation that holds each address, until one has the snapshot's size. A gc callback (the first
collection after the core returned, before the reply goes) then writes the output with one bit changed
at the snapshot's start, where the first output lies. The parent copies the snapshot out and digests
its copy against the MAC'd digest: rejected (MAC). It raises where it finds no snapshot, so that a
harness without one, or a driver that hides it, shows as this row's mismatch, not as a pass."""

import ctypes
import gc

import _honest
import torch

from harness.contract.output_file import SNAPSHOT_BYTES

cuda = ctypes.CDLL("libcuda.so.1")
late = {"bytes": None, "snapshot": None}


def find_snapshot(near: int, span: int = 1 << 40, step: int = 2 << 20) -> int | None:
    """The first allocation of the snapshot's size at 2 MiB steps outward from ``near``, up to ``span``
    either side (about a million driver queries at most)."""
    base, size = ctypes.c_ulonglong(), ctypes.c_size_t()
    start = near - near % step
    for distance in range(0, span, step):
        for address in (start + distance, start - distance - step):
            found = address > 0 and cuda.cuMemGetAddressRange_v2(
                ctypes.byref(base), ctypes.byref(size), ctypes.c_ulonglong(address)) == 0
            if found and size.value == SNAPSHOT_BYTES:  # the parent's size (a multiple of the granularity)
                return base.value
    return None


def rewrite(phase, info):
    if late["bytes"] is not None and late["snapshot"] is not None:
        data = late["bytes"]
        cuda.cuMemcpyHtoD_v2(ctypes.c_ulonglong(late["snapshot"]), ctypes.c_char_p(data), ctypes.c_size_t(len(data)))
        late["bytes"] = None


def custom_kernel(data):
    c = _honest.gemm(data)
    if late["snapshot"] is None:
        late["snapshot"] = find_snapshot(c.data_ptr())
        if late["snapshot"] is None:
            raise RuntimeError("no device snapshot found near the outputs (row f04 expects one)")
    changed = bytearray(c.view(-1).view(torch.uint8).cpu().numpy().tobytes())
    changed[0] ^= 1  # the lowest mantissa bit of the first element
    late["bytes"] = bytes(changed)
    return c


gc.set_threshold(1)
gc.callbacks.append(rewrite)
