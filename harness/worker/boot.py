"""The worker's first module: confine the process while it has one thread, then import and serve.

Landlock binds the thread that applies it and the threads it starts afterwards, not those already
running, and importing torch (numpy's OpenBLAS among its imports) starts threads that a
submission with native code could take over. So nothing but the sandbox (ctypes and os) is
imported before ``sandbox.in_worker``; the request loop, torch with it, comes after.

Argument layout (``harness.judge.worker_link.worker_spawn``): commands fd, results fd, key fd,
sandbox steps, stacks fd, supervisor fd, device, compile caches' root, output file, staging file.
"""

from __future__ import annotations

import os

from harness.worker import sandbox


def workdir() -> str:
    """The worker's own folder: the parent names it, else the current directory."""
    return os.environ.get("NVFP4_WORKDIR", os.getcwd())


def steps(argv: list[str]) -> frozenset[str]:
    """The sandbox steps the parent chose (``NVFP4_SANDBOX``)."""
    return frozenset(argv[3].split(","))


def cache_root(argv: list[str]) -> str | None:
    """The compile caches' root a blank worker may write until its owner is known; None: no caches."""
    return argv[7] if len(argv) > 7 and argv[7] != "-" else None


def main(argv: list[str]) -> int:
    confinement = sandbox.in_worker(workdir(), steps(argv), cache_root(argv))
    from harness.worker import serve_loop  # torch, and its threads, only now

    return serve_loop.main(argv, confinement)
