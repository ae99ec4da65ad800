"""Unmap the parent's device snapshot from the worker's process (issue 33): the core copies a GPU
call's outputs that leave the pipe into the snapshot, at an address only its hidden page holds. This
finds it as f01 does (_snapshot.find: asking the driver) and unmaps it on the first call, so that the
core's next copy into it meets no memory. The core's copy fails and the run ends with the worker's own
fault, named; no result is signed from memory the parent does not share. It raises where it finds no
snapshot."""

import ctypes

import _honest
import _snapshot

from harness.contract.output_file import SNAPSHOT_BYTES

done = {"unmapped": False}


def unmap_snapshot(near: int) -> None:
    result = _snapshot.driver().cuMemUnmap(ctypes.c_ulonglong(_snapshot.find(near)), ctypes.c_size_t(SNAPSHOT_BYTES))
    if result != 0:
        raise RuntimeError(f"cuMemUnmap of the snapshot refused ({result})")


def custom_kernel(data):
    c = _honest.gemm(data)
    if not done["unmapped"]:
        unmap_snapshot(c.data_ptr())
        done["unmapped"] = True
    return c
