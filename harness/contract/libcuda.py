"""The CUDA driver through ctypes, for the parent's direct driver calls (its PTX modules,
harness/contract/ptx_module.py; the device snapshot, harness/judge/worker_link/device_snapshot.py):
the library loaded once, and one way to turn a failed call into an exception."""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def driver() -> ctypes.CDLL:
    """libcuda, which torch has loaded already where there is a GPU."""
    return ctypes.CDLL("libcuda.so.1")


def check(result: int, what: str) -> None:
    """Raise RuntimeError naming ``what`` where a driver call returned other than CUDA_SUCCESS."""
    if result != 0:
        raise RuntimeError(f"{what} failed (CUresult {result})")
