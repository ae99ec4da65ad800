"""The input draws' Triton kernels compiled before the worker's file comes, with no CUDA context.

A worker kept ahead for the next file (judge/worker_link/blank_workers.py: the leaderboard, the
service, a cluster worker) waits while another file's timed calls hold the GPU, so it may not make
a CUDA context; but compiling needs none. Triton's JIT asks its driver for the current device, stream
and compute capability; while this runs they are answered from the capability the parent passed
(device 0: the worker sees only its GPU), and the kernels are found in the parent's Triton cache
(harness/kernel_cache.py: the parent compiled the same ones for its own draws), else compiled, with
their launchers, into the worker's own compile folder (its TRITON_CACHE_DIR until Start names the
owner's); either way they wait in Triton's in-memory cache. Start, once it has a CUDA context and
before it names the owner's caches, loads them (``load``); its first draw then launches at once
(issue 33). Runs before any submission exists; a failure is left for Start, which compiles as before.
``python -m harness eval``'s own worker makes its CUDA context before Start instead, and compiles them
for that GPU (``ahead_of_start``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from harness.contract import messages
from harness.contract.cache_home import HARNESS_KERNELS
from harness.worker import cuda_context, worker_args

QUERIES = ("get_current_device", "get_current_stream", "get_device_capability")
"""What Triton's CUDA driver asks torch (and so CUDA) for: answered here instead."""


@contextlib.contextmanager
def answered_driver(capability: int) -> Iterator[Any]:
    """Triton's active driver answering device 0, stream 0 and ``capability`` (90: sm_90) meanwhile."""
    from triton.runtime import driver

    active = driver.active
    saved = {name: active.__dict__[name] for name in QUERIES if name in active.__dict__}
    active.get_current_device = lambda: 0
    active.get_current_stream = lambda device=None: 0
    active.get_device_capability = lambda device=None: divmod(capability, 10)
    try:
        yield active
    finally:
        for name in QUERIES:
            if name in saved:
                setattr(active, name, saved[name])
            else:
                delattr(active, name)


COMPILED: list[Any] = []
"""The kernels compiled ahead, until Start loads them."""
FOUND_IN: list[str | None] = [None]
"""The Triton cache they were found or built in (None: the worker's own), where Start loads them from."""


@contextlib.contextmanager
def triton_cache(folder: str | None) -> Iterator[None]:
    """Triton's cache folder (TRITON_CACHE_DIR, read on every use) set to ``folder`` meanwhile; None
    leaves the worker's own."""
    saved = os.environ.get("TRITON_CACHE_DIR")
    if folder is not None:
        os.environ["TRITON_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved


def draw_kernels(capability: int) -> None:
    """The input draw's kernels (problems/shared/draw_kernels.py) for ``capability``: found in the parent's
    Triton cache where it has them (harness/kernel_cache.py: read only; a miss there fails at once on the
    write the worker may not make), else compiled into the worker's own folder; any failure leaves them
    to Start."""
    parent = os.environ.get(HARNESS_KERNELS)
    for folder in ([parent] if parent else []) + [None]:
        # The cache first: the driver that answered_driver makes builds its own C module (cuda_utils, a gcc
        # compile of 0.3-0.4 s on the H100, docs/results.md run 31) in whatever cache is named then.
        with contextlib.suppress(Exception), triton_cache(folder), answered_driver(capability):
            from problems.shared.draw_kernels import compile_all

            COMPILED.extend(compile_all())
            FOUND_IN[0] = folder
            return


def load() -> None:
    """Load the kernels compiled ahead into this process's CUDA context (their launchers from the cache
    they were found or built in): Start calls it before it names the owner's caches."""
    with triton_cache(FOUND_IN[0]):
        while COMPILED:
            with contextlib.suppress(Exception):
                COMPILED.pop()._init_handles()  # Triton's own first-launch step: launcher, module, function


def warm_cuda() -> int | None:
    """Make this process's CUDA context now, while the parent still imports (``python -m harness
    eval``'s own worker, issue 33); the parent asks only where no other run can be on the GPU. Returns
    the GPU's compute capability (90: sm_90), None where it failed: that is left for the Start request
    to meet and report."""
    with contextlib.suppress(Exception):
        import torch

        torch.zeros(1, device="cuda")
        major, minor = torch.cuda.get_device_capability()
        return 10 * major + minor
    return None


def ahead_of_start(argv: list[str], entered: float) -> dict[str, float]:
    """What a worker does before its Start request, with no submission yet: ``eval``'s own worker
    makes its CUDA context and compiles the draws' kernels for that GPU (1.7-2.1 s of its Start on the
    H100 until then, results.md run 23), a blank worker kept ahead compiles them for the capability the
    parent named, with no context; both import torch's extension builders, which Start wraps
    (extension_arch). Returns its seconds (messages.WORKER_AHEAD): from ``entered`` (its
    entry's perf_counter) until it is ready for Start, and of those the kernels'; and ``entered`` itself
    (messages.ENTERED_AT)."""
    capability = worker_args.ahead_capability(argv)
    cuda_context.join()  # the context boot began on a thread (torch's first CUDA call finds it made)
    if worker_args.ahead_device(argv) == "cuda":
        capability = warm_cuda()
    kernels = time.perf_counter()
    if capability is not None:
        draw_kernels(capability)
    kernels_s = time.perf_counter() - kernels
    with contextlib.suppress(Exception):  # Start wraps its builders (extension_arch): imported now, not then
        from torch.utils import cpp_extension  # noqa: F401
    return {"ahead": time.perf_counter() - entered, "ahead_kernels": kernels_s, messages.ENTERED_AT: entered}
