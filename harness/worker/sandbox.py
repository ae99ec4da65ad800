"""The worker's confinement of itself, first thing in the worker, before the submission exists.

No new privileges, not dumpable (no ptrace or /proc/<pid>/mem by others), and Landlock
(``harness.worker.landlock``: writes only in its folders, the device nodes and /proc, no process's
memory files at all); each step best effort and reported (docs/security.md). It runs before
torch is imported, while the worker has one thread: Landlock binds the calling thread and what it
starts later, not threads already running. The parent's half (network namespace, uid drop,
before exec) is ``harness.judge.worker_link.worker_confinement``. What took effect travels to the parent in 'ready'.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from harness.contract import process_guard
from harness.worker import landlock

PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _network_isolated() -> bool:
    """True when this process's network namespace has no interface but loopback.

    /proc/self/net/dev follows the reader's namespace (/sys/class/net follows sysfs's mount).
    """
    try:
        lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return {line.split(":")[0].strip() for line in lines} <= {"lo"}


def _yama_scope() -> str:
    try:
        return Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    except OSError:
        return "absent"


def in_worker(workdir: str, steps: frozenset[str], cache_root: str | None = None) -> dict[str, str]:
    """Apply what the worker can to itself, before the submission exists; report every step.
    ``cache_root``: the compile caches' root, writable only until ``narrow_writes`` (the Start request)."""
    if os.uname().sysname != "Linux":
        return {"sandbox": "off (not Linux)"}
    libc = _libc()
    skipped = "off (not chosen: NVFP4_SANDBOX)"
    report = {"no_new_privs": skipped, "ptrace": skipped, "writes": skipped, "memory files": skipped}
    if "no_new_privs" in steps:
        report["no_new_privs"] = "on" if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 else "off"
    if "not_dumpable" in steps:
        report["ptrace"] = "blocked (not dumpable" if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 else "open ("
        report["ptrace"] += f", yama ptrace_scope {_yama_scope()})"
    report["network"] = "off (private namespace, loopback only)" if _network_isolated() else "reachable"
    report["processes"] = os.environ.get(process_guard.ENV, process_guard.UNGUARDED)
    report["uid"] = f"{os.getuid()}" + (" (root: not dropped)" if os.getuid() == 0 else "")
    if "landlock" in steps:
        running = len(os.listdir("/proc/self/task"))
        report["writes"], report["memory files"] = landlock.first_layer([workdir, *filter(None, [cache_root])])
        if running > 1:
            report["memory files"] += f" ({running - 1} threads started before it are not bound)"
    return report


def narrow_writes(workdir: str, folders: list[str]) -> str:
    """A second Landlock layer, before the submission exists: writes only in the worker's folder,
    the device nodes and ``folders`` (one owner's compile caches), no longer anywhere under the
    caches' root a blank worker was started with (layers only ever narrow what is allowed)."""
    return landlock.writes_only([workdir, *folders])
