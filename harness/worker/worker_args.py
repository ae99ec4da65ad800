"""The worker's command line, read by its entry (boot, before torch) and by its request loop.

Layout (``harness.judge.worker_link.worker_spawn``): commands fd, results fd, key fd, sandbox steps,
stacks fd, supervisor fd, device, compile caches' root, output file, staging file, the GPU's compute
capability for kernels compiled ahead.
"""

from __future__ import annotations

import os


def workdir() -> str:
    """The worker's own folder: the parent names it, else the current directory."""
    return os.environ.get("NVFP4_WORKDIR", os.getcwd())


def steps(argv: list[str]) -> frozenset[str]:
    """The sandbox steps the parent chose (``NVFP4_SANDBOX``)."""
    return frozenset(argv[3].split(","))


def cache_root(argv: list[str]) -> str | None:
    """The compile caches' root a blank worker may write until its owner is known; None: no caches."""
    return argv[7] if len(argv) > 7 and argv[7] != "-" else None


def optional_fd(argv: list[str], position: int) -> int | None:
    """The descriptor at ``position`` ("-" or absent: none)."""
    return int(argv[position]) if len(argv) > position and argv[position] != "-" else None


def ahead_device(argv: list[str]) -> str:
    """"cuda" where the parent asked this worker to make its CUDA context before Start (``eval``'s own)."""
    return argv[6] if len(argv) > 6 else "-"


def ahead_capability(argv: list[str]) -> int | None:
    """The compute capability (90: sm_90) a blank worker compiles the draws' kernels for before its
    file comes (harness/worker/compile_ahead.py); None: it does not."""
    return int(argv[10]) if len(argv) > 10 and argv[10] != "-" else None
