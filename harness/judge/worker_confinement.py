"""The parent's half of the worker's confinement, applied in the forked child before exec.

Still as the evaluator's user: a fresh network namespace when the kernel permits it, then, when
that user is root, a switch to an unprivileged uid. The worker's own half (no_new_privs, not
dumpable, Landlock) is ``harness.worker.sandbox``. docs/security.md says what each step stops.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from pathlib import Path

UNPRIVILEGED_UID = 65534  # nobody
STEPS = ("netns", "uid", "no_new_privs", "not_dumpable", "landlock")
STEPS_ENV = "NVFP4_SANDBOX"
"""Comma-separated subset of STEPS to apply (default: all); read by the parent, which passes the
choice to the worker, for hosts where one of them stops CUDA (scripts/sandbox_probe.py finds out)."""


def chosen_steps() -> frozenset[str]:
    raw = os.environ.get(STEPS_ENV)
    return frozenset(STEPS if raw is None else (s.strip() for s in raw.split(",") if s.strip() in STEPS))


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


def before_exec(drop_to_uid: int | None, steps: frozenset[str]) -> None:
    """In the child before exec: a private network namespace, then the unprivileged uid.

    Results are written to fd-free places only (the child cannot report yet); ``in_worker``
    observes them afterwards (no interface but loopback, the uid it runs as).
    """
    if "netns" in steps:
        private_network()
    if drop_to_uid is not None and "uid" in steps:
        drop_privileges(drop_to_uid)


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
