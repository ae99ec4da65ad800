"""The worker's CUDA context made on a thread while its main thread imports torch (``eval``'s own worker).

Making CUDA's primary context (cuInit, then the device's context: 0.31-0.37 s on the H100) is driver work
that holds no Python lock, while importing torch (1.4-2.0 s) is Python work; done one after the other they
were both on the path to the worker's Ready, which the parent waits for (docs/results.md run 31). torch
takes the same primary context when it first needs one, so its own first CUDA call then finds it made.

Only where the parent asked for a context ahead (``eval``: no other run can be on the GPU); a blank worker
kept for a later file makes none, since another file's timed calls may be running. The thread starts after
the sandbox (Landlock binds the threads a confined thread starts) and is joined before Start: no thread of
the harness's own is left when the submission comes. Any failure (no driver, no device) is left for Start
to meet and report, as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

DRIVER = "libcuda.so.1"
_AHEAD: list[threading.Thread] = []


def _retain_primary_context() -> None:
    with contextlib.suppress(OSError, AttributeError):
        driver = ctypes.CDLL(DRIVER)
        device, context = ctypes.c_int(), ctypes.c_void_p()
        if driver.cuInit(0) == 0 and driver.cuDeviceGet(ctypes.byref(device), 0) == 0:
            driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)


def start(device: str) -> bool:
    """Begin making the primary context of the worker's first visible GPU where ``device`` is "cuda" (the
    parent's word for a context ahead); whether a thread was started."""
    if device != "cuda":
        return False
    thread = threading.Thread(target=_retain_primary_context, name="nvfp4-cuda-context", daemon=True)
    thread.start()
    _AHEAD.append(thread)
    return True


def join() -> None:
    """Wait for ``start``'s thread, if any (before torch's first CUDA call, and always before Start)."""
    while _AHEAD:
        _AHEAD.pop().join()
