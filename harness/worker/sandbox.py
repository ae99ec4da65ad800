"""The worker's confinement of itself, first thing in the worker, before the submission exists.

No new privileges, not dumpable (no ptrace or /proc/<pid>/mem by others), and a Landlock rule set
that allows writes only in its temporary directory and the device nodes; each step best effort
and reported (docs/security.md). The parent's half (network namespace, uid drop, before exec) is
``harness.judge.worker_link.worker_confinement``. What took effect travels to the parent in 'ready'.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

from harness.contract import process_guard

PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_RULE_PATH_BENEATH = 1
# Write-type accesses of Landlock ABI 1: write/truncate a file, remove, make anything.
LANDLOCK_WRITES = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (
    1 << 11) | (1 << 12)
LANDLOCK_ACCESS_FS_REFER = 1 << 13
"""ABI 2: link or rename across directories. Without it every such rename fails with EXDEV (a
ruleset of ABI 1 forbids them all), and Triton's cache renames a finished build from a temporary
folder into place: on an H100 every Triton submission crashed with 'Invalid cross-device link'."""
LANDLOCK_CREATE_RULESET_VERSION = 1
WRITABLE_SYSTEM_PATHS = ("/dev", "/proc")
"""CUDA opens /dev/nvidia* read-write, and fails (error 304) without writes under /proc (probed on an
H100, 2026-11-23): so /proc/self/mem stays writable (docs/security.md)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


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


def _landlock(writable: list[str]) -> str:
    libc = _libc()
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 2:
        return f"off (Landlock ABI {abi} cannot allow the renames Triton's cache makes; ABI 2 needed)"
    access = LANDLOCK_WRITES | LANDLOCK_ACCESS_FS_REFER
    attr = _RulesetAttr(access)
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        return f"off (kernel refused: errno {ctypes.get_errno()})"
    try:
        for path in writable:
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                try:
                    rule = _PathBeneath(access, fd)
                    libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0)
                finally:
                    os.close(fd)
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return f"off (restrict_self failed: errno {ctypes.get_errno()})"
    finally:
        os.close(ruleset)
    return "on: writes only in " + ", ".join(writable)


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
    report = {"no_new_privs": skipped, "ptrace": skipped, "writes": skipped}
    if "no_new_privs" in steps:
        report["no_new_privs"] = "on" if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 else "off"
    if "not_dumpable" in steps:
        report["ptrace"] = "blocked (not dumpable" if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 else "open ("
        report["ptrace"] += f", yama ptrace_scope {_yama_scope()})"
    report["network"] = "off (private namespace, loopback only)" if _network_isolated() else "reachable"
    report["processes"] = os.environ.get(process_guard.ENV, process_guard.UNGUARDED)
    report["uid"] = f"{os.getuid()}" + (" (root: not dropped)" if os.getuid() == 0 else "")
    if "landlock" in steps:
        report["writes"] = _landlock([workdir, *WRITABLE_SYSTEM_PATHS, *filter(None, [cache_root])])
    return report


def narrow_writes(workdir: str, folders: list[str]) -> str:
    """A second Landlock layer, before the submission exists: writes only in the worker's folder,
    the device nodes and ``folders`` (one owner's compile caches), no longer anywhere under the
    caches' root a blank worker was started with (layers only ever narrow what is allowed)."""
    return _landlock([workdir, *WRITABLE_SYSTEM_PATHS, *folders])
