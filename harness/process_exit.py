"""How ``python -m harness`` ends: its output flushed and its exit handlers run, then the process ends
without the interpreter's teardown.

Python's own finalization of an interpreter that imported torch and triton spends 0.7-0.8 s collecting and
freeing their objects (measured on the CPU, and 0.76-1.0 s after the report's last line of a ranked run on
the H100, docs/results.md run 28): wall time of every `make eval` and ranked run that frees nothing the
operating system does not free at exit. What must happen still happens: ``atexit``'s handlers (the blank
workers discarded, a local cluster closed, temporary folders removed by their finalizers), then stdout and
stderr flushed.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` after its exit handlers ran and its output was flushed."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            stream.flush()
    os._exit(code)
