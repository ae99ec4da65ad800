"""Which processes belong to a run: those below its reaper, read from /proc (the supervisor's signal rule).

The reaper is a child subreaper, so everything the worker starts stays below it, orphans included
(a submission that leaves its session with setsid is adopted by the reaper, not by init). A signal
to one of those is the run's own business; any other target (another entry's worker of the same
uid, the reaper itself, the evaluator) is refused (``syscall_policy``, rule ``signals``).
"""

from __future__ import annotations

import contextlib
import os

MAX_DEPTH = 256
"""Parent links followed at most (a chain longer than any real process tree is not ours)."""


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def below(pid: int, ancestor: int) -> bool:
    """Whether process (or thread) ``pid`` descends from ``ancestor``; False when it is ``ancestor``
    itself or cannot be read (gone, or hidden by hidepid)."""
    current = pid
    for _ in range(MAX_DEPTH):
        parent = _parent(current)
        if parent is None or parent <= 1:
            return False
        if parent == ancestor:
            return True
        current = parent
    return False


def pidfd_target(task: int, fd: int) -> int | None:
    """The process that ``task``'s fd ``fd`` names for pidfd_send_signal: a pidfd's (its fdinfo's
    ``Pid:``), or a /proc/<pid> directory's; None for anything else."""
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{task}/fdinfo/{fd}") as handle:
        for line in handle:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    with contextlib.suppress(OSError, ValueError):
        target = os.readlink(f"/proc/{task}/fd/{fd}")
        parts = target.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "proc":
            return int(parts[1])
    return None


def same_pid_namespace(pid: int) -> bool:
    """Whether ``pid`` sees the pids this process sees (no PID namespace of its own); True when
    unreadable (then the rule judges by this side's pids, which refuses rather than allows)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")
    except OSError:
        return True
