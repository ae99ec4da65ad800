"""The parent's half of the worker's confinement, applied before the worker's exec.

Still as the evaluator's user: a fresh network namespace when the kernel permits it (in the forked
child that becomes ``harness.judge.worker_link.worker_reaper``), then in the reaper, a new PID namespace where
it may create one and, when that user is root, a switch to an unprivileged uid in the worker's own
process. The worker's own half (no_new_privs, not dumpable, Landlock) is
``harness.worker.sandbox``. docs/security.md says what each step stops.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from pathlib import Path

UNPRIVILEGED_UID = 65534  # nobody
STEPS = ("netns", "pidns", "uid", "no_new_privs", "not_dumpable", "landlock", "syscalls")
"""``syscalls``: the worker's seccomp filter and its supervisor (harness.judge.worker_link.syscall_supervisor)."""
DEFAULT_STEPS = frozenset(STEPS) - {"pidns"}
"""Every step but the pid namespace: on the lent H100 (2026-11-24, scripts/sandbox_probe.py) CUDA
fails inside one ("cudaGetDeviceCount ... Error 304"), alone or with the other steps, so it is on
only where NVFP4_SANDBOX names it. The reaper (harness.judge.worker_link.worker_reaper) still collects and
kills every orphan of the worker as a child subreaper."""
STEPS_ENV = "NVFP4_SANDBOX"
"""Comma-separated subset of STEPS to apply (default: DEFAULT_STEPS); read by the parent, which
passes the choice to the worker, for hosts where one of them stops CUDA (scripts/sandbox_probe.py)."""


def chosen_steps() -> frozenset[str]:
    raw = os.environ.get(STEPS_ENV)
    return DEFAULT_STEPS if raw is None else frozenset(s.strip() for s in raw.split(",") if s.strip() in STEPS)


CLONE_NEWNET = 0x40000000


def blocked_at(path: Path) -> Path | None:
    """Where an unprivileged uid is stopped on its way to ``path`` (resolved): the first folder it
    cannot search, or the file itself when it cannot read it; None when it gets there."""
    path = path.resolve()
    for parent in reversed(path.parents):
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None if os.stat(path).st_mode & stat.S_IROTH else path


def readable_by_others(path: Path) -> bool:
    """Whether an unprivileged uid can reach ``path``: every parent searchable, the file readable."""
    return blocked_at(path) is None


def before_exec(steps: frozenset[str]) -> None:
    """In the child before exec: a private network namespace (the reaper and the worker share it).

    The uid is dropped later, in the worker's own process (``worker_reaper``), so that the reaper
    keeps the evaluator's uid, out of the worker's reach. Results are written to fd-free places
    only (the child cannot report yet); ``in_worker`` observes them afterwards.
    """
    if "netns" in steps:
        private_network()


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def private_network() -> None:
    """A fresh network namespace (loopback only); refused without CAP_SYS_ADMIN: in_worker reports it."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().unshare(CLONE_NEWNET)


def drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
