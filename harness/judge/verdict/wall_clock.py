"""Where a run's wall time goes: named phases, each the sum of the spans spent in it.

The JSON result carries them (``RunResult.wall_s``) and the report's last lines show them, so an
organizer sees what a ranked run pays for besides the submission's own kernels (issue 24).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

PHASES = ("start", "setup", "worker_start", "tests", "warmup", "timed", "recheck", "profile", "close", "vendor",
          "other")
"""The top-level phases in the order they happen; ``start`` is the process's own start and imports
before the evaluation began (known for a command-line run, absent in a long-lived service);
``vendor`` is the vendor library's first measurement on this GPU, made for the report's "% of
vendor" when none is cached (a contestant's `eval` only; 6-10 s on the H100 in docs/results.md run
14, where it was booked as ``other``); ``other`` is what the evaluation spent outside every named
phase. ``submission_import``, the worker's
own figure, is a part of ``worker_start``, not a phase of its own, as are the worker's figures for the
steps of its Start before the import (``worker_reference``, ``worker_timer``, ``worker_draws``,
``worker_filter``: harness.contract.messages.WORKER_STEPS); so are ``supervisor`` (seconds the
syscall supervisor spent answering the worker's notified syscalls, while the worker waited) and
``supervisor_notifications`` (how many: a count, not seconds). ``worker_head_start`` is no part of the
wall time at all: the seconds the run's workers had already been starting, before the file was
handed to them (``python -m harness eval`` starts its worker beside the parent's own imports, a
queue of files starts the next file's worker during the current one: issue 33), overlapped with
``start`` or another file's run; nor are ``worker_ahead`` and ``worker_ahead_kernels``, the worker's own
seconds before the file came (harness.contract.messages.WORKER_AHEAD): where ``worker_ahead`` exceeds
``worker_head_start``, the parent waited for the worker; nor is ``worker_entry``, from the worker's spawn to its
first line (its two interpreters' starts, before ``worker_ahead`` begins: messages.ENTERED_AT)."""


class WallClock:
    """Seconds per phase; ``phase`` measures a span, ``add`` books one measured elsewhere."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def rounded(self, elapsed_s: float) -> dict[str, float]:
        """The phases, and ``other``: what ``elapsed_s`` spent outside all of them."""
        named = sum(s for name, s in self.seconds.items() if name in PHASES)
        return {name: round(s, 3) for name, s in {**self.seconds, "other": max(0.0, elapsed_s - named)}.items()}


def process_age_s() -> float | None:
    """Seconds since this process started (Linux), for the ``start`` phase: interpreter start and
    imports before the evaluation began; None where /proc cannot tell."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])  # field 22, starttime, counted after the ")" of the name
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, uptime_s - started_ticks / os.sysconf("SC_CLK_TCK"))
