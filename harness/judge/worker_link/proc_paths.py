"""Where an open of the worker would lead: the supervisor's reading of a path, for its open rules.

The kernel resolves a path in the calling task's view: its cwd or a directory fd, /proc/self as
that task, symlinks and /proc's magic links followed. ``walk`` repeats that from the supervisor
(same mount namespace, root), substituting the task for /proc/self and /proc/thread-self, and
returns every path the lookup passes through; ``sensitive`` says which of them the rules refuse.

It reads the filesystem after the task named the path, so what it sees can differ from what the
kernel then opens (a symlink swapped, the path rewritten by another thread): docs/security.md,
"What the supervisor does not cover".
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable

MAX_LINKS = 40  # the kernel's own limit on symlinks in one lookup
_PROC_OBJECT = r"(?P<pid>\d+)(/task/\d+)?/(?P<what>mem|pagemap|map_files)(/.*)?"


def _parts(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def walk(tid: int, tgid: int, base: str, path: str, roots: Iterable[str],
         readlink: Callable[[str], str] = os.readlink, lstat: Callable[[str], os.stat_result] = os.lstat) -> list[str]:
    """Every absolute path the lookup of ``path`` (relative to ``base`` unless absolute) passes
    through, symlinks followed, ending with the one it opens; /proc/self and /proc/thread-self are
    ``tgid`` and ``tid``'s. Components that do not exist are kept as written."""
    roots = [_parts(root) for root in roots]
    current = [] if path.startswith("/") else _parts(base)
    pending = _parts(path)
    seen: list[str] = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if current:
                current.pop()
            continue
        current.append(part)
        for root in roots:
            if current[:-1] == root and part in ("self", "thread-self"):
                current = [*root, str(tgid)] + (["task", str(tid)] if part == "thread-self" else [])
        full = "/" + "/".join(current)
        seen.append(full)
        try:
            is_link = stat.S_ISLNK(lstat(full).st_mode)
        except OSError:
            continue
        if not is_link:
            continue
        links += 1
        target = readlink(full) if links <= MAX_LINKS else ""
        in_proc = any(current[:len(root)] == root for root in roots)
        if not target or (in_proc and not target.startswith("/") and ":" in target):
            break  # a loop, or a magic link to an object with no path (pipe:[...]): the lookup ends here
        if target.startswith("/"):
            current = []
        else:
            current.pop()
        pending = _parts(target) + pending
    return seen


def base_of(tid: int, dirfd: int, path: str, readlink: Callable[[str], str] = os.readlink) -> str | None:
    """The directory a relative ``path`` starts from for ``tid``: its cwd or ``dirfd``'s target;
    None when that is no directory path (an fd of a pipe, a socket)."""
    if path.startswith("/"):
        return "/"
    try:
        base = readlink(f"/proc/{tid}/cwd" if dirfd == -100 else f"/proc/{tid}/fd/{dirfd}")
    except OSError:
        return None
    return base if base.startswith("/") else None


def sensitive(seen: list[str], roots: Iterable[str]) -> tuple[str, str] | None:
    """(rule, path) for the first path of a lookup the rules refuse: a process's memory, page map
    or map_files (``proc_mem``), the userfaultfd device (``userfaultfd``); None when every one is
    allowed. (The worker's channels are sockets, which the kernel never opens through /proc.)"""
    patterns = [re.compile(re.escape(root.rstrip("/")) + "/" + _PROC_OBJECT + "$") for root in roots]
    for path in seen:
        if path == "/dev/userfaultfd":
            return "userfaultfd", path
        if any(pattern.match(path) for pattern in patterns):
            return "proc_mem", path
    return None
