"""Where a hung worker's threads stood: its Python stacks written to the parent's file before the
stage limit runs out (the parent reads them; harness/judge/worker_link/worker_process.py: stacks)."""

from __future__ import annotations

import contextlib
import faulthandler
import signal
from collections.abc import Iterator

WATCHDOG_LEAD = 0.95
"""The watchdog writes the stacks at this fraction of a request's limit: before the parent's own
limit runs out, so the dump is there when the parent looks."""


@contextlib.contextmanager
def stacks_before_the_limit(fd: int | None, limit_s: float | None) -> Iterator[None]:
    """Every thread's Python stack written to ``fd`` (the parent's file) just before this request's
    limit, by faulthandler's watchdog: a C thread that needs no signal and no GIL, so it answers
    where SIGUSR1 did not (a CUDA worker on the H100: a library loaded with CUDA takes SIGUSR1 over,
    docs/results.md run 12). Arming and cancelling it costs about 40 us a request (2-core CPU),
    outside the timed window."""
    armed = fd is not None and limit_s is not None and 0 < limit_s < 1e6
    if armed:
        faulthandler.dump_traceback_later(max(0.05, WATCHDOG_LEAD * limit_s), file=fd)
    try:
        yield
    finally:
        if armed:
            faulthandler.cancel_dump_traceback_later()


def arm_stack_dump(fd: int) -> None:
    """The second route to the stacks: at a stage's time limit, when the watchdog wrote nothing, the
    parent sends SIGUSR1 before it kills this process, and faulthandler's C signal handler writes
    every thread's Python stack to ``fd`` (a thread stuck in C code still answers)."""
    faulthandler.register(signal.SIGUSR1, file=fd, all_threads=True)
