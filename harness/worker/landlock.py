"""The worker's Landlock rule sets: what it may read and write, checked by the kernel at each open.

Why the kernel and not the supervisor: the supervisor reads an open's path from the worker's
memory before the kernel does, and another thread can rewrite it between the two readings
(docs/security.md, "What the supervisor does not cover"). A Landlock rule is checked on the file
the kernel actually reaches, so no path trick (a rewritten string, a swapped symlink, /proc/self,
a directory fd, an fd's magic link) gets around it.

The first layer, applied before torch or any other thread exists, grants reads everywhere and writes
in the worker's folders, the device nodes and /proc, but nothing of any process's memory:
``/proc/<pid>/mem`` (reads and writes there pass ``mseal`` and ``PROT_NONE``: the key page, the
sealed driver table), ``pagemap``, ``map_files``, and ``task/``, which holds each thread's ``mem``
again; of every procfs mount, every pid but the worker's own is left out whole. CUDA's driver writes
its threads' names into ``task/<tid>/comm`` and fails to start without (measured); the worker's
preload (csrc/preload.c) sends those writes to /dev/null, and where it is not loaded ``task/`` is
granted writes, which leaves each thread's ``mem`` open for writing. Landlock grants by hierarchy
and cannot carve a hole below a grant, so the rules are the hierarchies that cover everything else
(``cover``). A rule on a procfs file holds its inode, but procfs makes a new inode when a dentry is
looked up again: the first layer keeps an O_PATH descriptor on each procfs rule's file, so its
dentry (and the rule) lives as long as the worker.

A second layer (``writes_only``) narrows writes further; layers only ever take rights away.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat

from harness.contract import proc_mounts

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
RULE_PATH_BENEATH = 1
CREATE_RULESET_VERSION = 1
EXECUTE, WRITE_FILE, READ_FILE = 1 << 0, 1 << 1, 1 << 2
WRITES = WRITE_FILE | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (
    1 << 12)
"""Landlock ABI 1's write-type accesses: write a file, remove, make anything."""
REFER = 1 << 13
"""ABI 2: link or rename across directories. Without it every such rename fails with EXDEV (a
ruleset of ABI 1 forbids them all), and Triton's cache renames a finished build from a temporary
folder into place: on an H100 every Triton submission crashed with 'Invalid cross-device link'."""
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE
"""The rights a rule on a file (not a directory) may carry."""
HIDDEN_PID_ENTRIES = frozenset({"mem", "pagemap", "map_files", "task"})
WRITABLE_SYSTEM_PATHS = ("/dev", "/proc")
"""CUDA opens /dev/nvidia* read-write, and fails (error 304) without writes under /proc (probed on an
H100, 2026-11-23). /dev is granted whole: a device node the driver makes after the worker starts
(nvidia-uvm on a machine's first CUDA use) would miss a rule made per node; /dev/userfaultfd, the
one node a rule set would leave out, only root may open by default, and its syscall is the
supervisor's to refuse."""

_pinned: list[int] = []
"""O_PATH descriptors on the procfs files the first layer's rules name (see the module's docstring)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _hidden(path: str, proc_roots: list[str], pid: int) -> bool:
    """Granted nothing: another process's /proc folder, /proc/self, the worker's own memory files."""
    parent, name = os.path.split(path)
    for root in map(os.path.normpath, proc_roots):
        if parent == root and (name in ("self", "thread-self") or (name.isdigit() and int(name) != pid)):
            return True
        if parent == os.path.join(root, str(pid)) and name in HIDDEN_PID_ENTRIES:
            return True
    return False


def cover(path: str, proc_roots: list[str], pid: int) -> list[str]:
    """Paths whose hierarchies cover ``path``'s but nothing ``_hidden``: a folder on the way to a
    procfs root, or the worker's own /proc folder, is split into its entries (links among them are
    left out: what they lead to is covered where it lies)."""
    if _hidden(path, proc_roots, pid):
        return []
    anchors = [*proc_roots, *(os.path.join(root, str(pid)) for root in proc_roots)]
    if not any(_under(anchor, path) for anchor in anchors):
        return [path]
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    paths = []
    for name in names:
        child = os.path.join(path, name)
        with contextlib.suppress(OSError):
            if not stat.S_ISLNK(os.lstat(child).st_mode):
                paths.extend(cover(child, proc_roots, pid))
    return paths


def first_layer_rules(writable: list[str], pid: int, roots: list[str], threads_hidden: bool = True
                      ) -> list[tuple[str, int]]:
    """(path, rights) of the first layer: reads everywhere but the hidden, writes too in ``writable``,
    the device nodes and /proc's granted part, renames across folders only in ``writable``; ``roots``:
    the procfs mount points. ``threads_hidden`` False: the worker's task/ is granted writes (see
    ``thread_names_redirected``)."""
    system = [*WRITABLE_SYSTEM_PATHS, *roots]
    rules = [(path, READ_FILE | (WRITES if any(_under(path, s) for s in system) else 0))
             for path in cover("/", roots, pid)]
    if not threads_hidden:
        rules += [(os.path.join(root, str(pid), "task"), WRITES) for root in roots]
    return rules + [(path, READ_FILE | WRITES | REFER) for path in writable]


def thread_names_redirected() -> bool:
    """Whether the worker's preload (harness/worker/csrc/preload.c) is loaded: CUDA's driver names
    its threads by writing /proc/self/task/<tid>/comm and fails to start where that is refused, so
    without the preload task/ stays writable (and each thread's mem with it, for writing)."""
    try:
        return bool(ctypes.c_int.in_dll(ctypes.CDLL(None), "nvfp4_thread_names_to_null").value)
    except ValueError:
        return False


def abi() -> int:
    """The kernel's Landlock ABI version (below 1: none)."""
    return ctypes.CDLL(None, use_errno=True).syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)


def restrict(rules: list[tuple[str, int]], handled: int, pin: tuple[str, ...] = ()) -> str | None:
    """Apply one layer to this thread and its future children; None, or why not (the kernel's errno).
    Rules on paths that do not exist are left out; those under ``pin`` keep an O_PATH descriptor."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _RulesetAttr(handled)
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        return f"kernel refused the rule set: errno {ctypes.get_errno()}"
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            kept = any(_under(path, root) for root in pin)
            try:
                is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
                rule = _PathBeneath(rights & handled & (~0 if is_dir else FILE_RIGHTS), fd)
                if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                    return f"rule on {path} refused: errno {ctypes.get_errno()}"
            finally:
                if kept:
                    _pinned.append(fd)
                else:
                    os.close(fd)
        if libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
            return f"restrict_self failed: errno {ctypes.get_errno()}"
    finally:
        os.close(ruleset)
    return None


def first_layer(writable: list[str]) -> tuple[str, str]:
    """Reads everywhere but any process's memory files, writes only in ``writable``, the device nodes
    and /proc (its memory files excepted): the sandbox line's 'writes' and 'memory files' texts."""
    version = abi()
    if version < 2:
        off = f"off (Landlock ABI {version} cannot allow the renames Triton's cache makes; ABI 2 needed)"
        return off, off
    with open("/proc/self/mountinfo") as handle:
        roots = proc_mounts.proc_roots(handle.read())
    hidden = thread_names_redirected()
    failed = restrict(first_layer_rules(writable, os.getpid(), roots, hidden), READ_FILE | WRITES | REFER,
                      pin=tuple(roots))
    if failed:
        return f"off ({failed})", f"off ({failed})"
    threads = "task/" if hidden else "task/ but writes there (no preload: a thread's mem is writable)"
    return ("on: writes only in " + ", ".join([*writable, *WRITABLE_SYSTEM_PATHS]),
            f"closed: no process's mem, pagemap, map_files or {threads}")


def writes_only(writable: list[str]) -> str:
    """A layer over writes alone: writes only in ``writable``, the device nodes and /proc."""
    if abi() < 2:
        return "off (Landlock ABI 2 needed)"
    paths = [*writable, *WRITABLE_SYSTEM_PATHS]
    failed = restrict([(path, WRITES | REFER) for path in paths], WRITES | REFER)
    return f"off ({failed})" if failed else "on: writes only in " + ", ".join(paths)
