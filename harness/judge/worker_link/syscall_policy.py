"""What the syscall supervisor answers to one notified syscall of the worker (pure decisions).

``decide`` takes the syscall (name, arguments, instruction pointer, calling thread) and what the
supervisor knows of the worker (``Worker``: the core's pages, the code loaded before the import,
its channel fds, and lookups into its memory and /proc) and returns a ``Verdict``: let it run, or
refuse it naming the rule (``harness.contract.syscall_rules``). Nothing here touches seccomp, so
each rule is tested on its own (tests/test_syscall_policy.py).
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.contract import syscall_rules as rules
from harness.judge.worker_link import proc_paths

PAGE = 4096
Range = tuple[int, int]
KEY_ACCESS, STATE_ACCESS = rules.PROT_READ, rules.PROT_READ | rules.PROT_WRITE
"""What the core's gate opens its pages to: the key page read-only (for a MAC), the hidden
call-state page read-write (around the core's own code); closed, each is PROT_NONE. The filter lets
the gate's closes through itself (syscall_filter.build), unnotified: the verdicts here would be the
same, and none of them is counted. Every opening from the gate is counted."""


@dataclass(frozen=True)
class Verdict:
    error: int = 0  # 0: the syscall runs (SECCOMP_USER_NOTIF_FLAG_CONTINUE); else it fails with this errno
    rule: str | None = None  # the rule that refused it
    detail: str = ""
    unlock: bool = False  # the core opened its key page (the parent counts these against its MACs)
    state_open: bool = False  # the call-state page opened read-write (counted alike)
    changed_code: bool = False  # it may change which mappings are executable: read them again


ALLOW = Verdict()


@dataclass
class Worker:
    """What the supervisor knows of the worker it guards; the callables read the live process."""

    pid: int
    gate_ip: int = 0
    core: list[Range] = field(default_factory=list)  # the core's image and its gate pages
    gate_pages: dict[Range, int] = field(default_factory=dict)  # the gate's pages and the access each opens to
    frozen: list[Range] = field(default_factory=list)  # executable when the filter was armed
    channels: frozenset[int] = frozenset()
    roots: list[str] = field(default_factory=lambda: ["/proc"])
    same_mm: Callable[[int], bool] = lambda tid: True
    same_files: Callable[[int], bool] = lambda tid: True
    executable: Callable[[], list[Range]] = list  # the worker's executable mappings now
    read_path: Callable[[int, int], str | None] = lambda tid, address: None
    lookup: Callable[[int, int, str], list[str]] = lambda tid, dirfd, path: []  # proc_paths.walk from the task
    ours: Callable[[int], bool] = lambda pid: False  # a process of this run: below the reaper (the supervisor's)
    pidfd_target: Callable[[int, int], int | None] = lambda tid, fd: None  # the process a task's pidfd names


def span(start: int, length: int) -> Range:
    """[start, end) rounded out to whole pages, as the kernel applies it."""
    first = start & ~(PAGE - 1)
    return first, (start + length + PAGE - 1) & ~(PAGE - 1) if length else first


def overlaps(target: Range, ranges: list[Range]) -> bool:
    return any(target[0] < end and start < target[1] for start, end in ranges)


def _refuse(rule: str, detail: str) -> Verdict:
    return Verdict(errno.EPERM, rule, detail)


def _prot(value: int) -> str:
    return "|".join(name for bit, name in ((1, "R"), (2, "W"), (4, "X")) if value & bit) or "NONE"


def _memory(name: str, args: list[int], ip: int, worker: Worker) -> Verdict:
    """mmap, mprotect, pkey_mprotect, munmap, madvise, mremap, shmat of a task sharing the worker's memory."""
    if name == "shmat":
        return _refuse("code", "shmat with SHM_REMAP or SHM_EXEC")
    if name == "mmap":
        address, length, prot, flags = args[:4]
        if prot & rules.PROT_WRITE and prot & rules.PROT_EXEC:
            return _refuse("wx", f"mmap {_prot(prot)}")
        if prot & rules.PROT_EXEC and flags & rules.MAP_ANONYMOUS:
            return _refuse("wx", "anonymous executable mmap")
        if flags & rules.MAP_FIXED:
            where = span(address, length)
            if overlaps(where, worker.core):
                return _refuse("core", f"mmap MAP_FIXED at {where[0]:#x} over the core")
            if overlaps(where, worker.frozen):
                return _refuse("code", f"mmap MAP_FIXED at {where[0]:#x} over code loaded before the import")
        return Verdict(changed_code=bool(prot & rules.PROT_EXEC or flags & rules.MAP_FIXED))
    if name in ("mprotect", "pkey_mprotect"):
        where, prot = span(args[0], args[1]), args[2]
        if prot & rules.PROT_WRITE and prot & rules.PROT_EXEC:
            return _refuse("wx", f"{name} {_prot(prot)}")
        if overlaps(where, worker.core):
            access = worker.gate_pages.get(where)
            if name == "mprotect" and ip == worker.gate_ip and prot in (0, access):
                return Verdict(unlock=prot == KEY_ACCESS, state_open=prot == access == STATE_ACCESS)
            return _refuse("core", f"{name} {_prot(prot)} at {where[0]:#x}, the core's")
        if prot & rules.PROT_WRITE and overlaps(where, worker.frozen + worker.executable()):
            return _refuse("code", f"{name} {_prot(prot)} at {where[0]:#x}, executable code")
        return Verdict(changed_code=bool(prot & rules.PROT_EXEC))
    if name == "mremap":
        old, old_length, new_length, flags, new_address = args[:5]
        places = [span(old, old_length or new_length)]
        if flags & rules.MREMAP_FIXED:
            places.append(span(new_address, new_length))
        for where in places:
            if overlaps(where, worker.core):
                return _refuse("core", f"mremap at {where[0]:#x}, the core's")
            if overlaps(where, worker.frozen):
                return _refuse("code", f"mremap at {where[0]:#x}, code loaded before the import")
        return Verdict(changed_code=True)
    where = span(args[0], args[1])  # munmap, madvise
    if overlaps(where, worker.core):
        return _refuse("core", f"{name} at {where[0]:#x}, the core's")
    if name == "munmap" and overlaps(where, worker.frozen):
        return _refuse("unmap_code", f"munmap at {where[0]:#x}, code loaded before the import")
    return Verdict(changed_code=name == "munmap")


def _descriptors(name: str, args: list[int], worker: Worker) -> Verdict:
    """dup2, dup3, close, close_range of a task sharing the worker's fd table."""
    if name in ("dup2", "dup3"):
        old, new = args[0] & 0xFFFFFFFF, args[1] & 0xFFFFFFFF
        if new in worker.channels and old != new:
            return _refuse("channels", f"{name}({old}, {new}): {new} is one of the worker's channels")
        return ALLOW
    if name == "close":
        fd = args[0] & 0xFFFFFFFF
        return _refuse("channels", f"close({fd}), one of the worker's channels") if fd in worker.channels else ALLOW
    first, last, flags = args[0] & 0xFFFFFFFF, args[1] & 0xFFFFFFFF, args[2]
    hit = sorted(fd for fd in worker.channels if first <= fd <= last)
    if hit and not flags & rules.CLOSE_RANGE_CLOEXEC:
        return _refuse("channels", f"close_range({first}, {last}) covers channel fd {hit[0]}")
    return ALLOW


def _open(name: str, args: list[int], tid: int, worker: Worker) -> Verdict:
    dirfd, address = (rules.AT_FDCWD, args[0]) if name == "open" else (_signed(args[0]), args[1])
    path = worker.read_path(tid, address)
    if path is None:  # unreadable now: the kernel might read something else later
        return Verdict(errno.EFAULT)
    hit = proc_paths.sensitive(worker.lookup(tid, dirfd, path), worker.roots)
    if hit:
        return _refuse(hit[0], f"{name} of {path!r} ({hit[1]})")
    return ALLOW


def _signed(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


ALWAYS = {"ptrace": "ptrace", "process_vm_readv": "process_vm", "process_vm_writev": "process_vm",
          "userfaultfd": "userfaultfd", "personality": "read_implies_exec"}
MOUNTS = frozenset({"mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
                    "fsmount", "fspick", "mount_setattr"})
MEMORY = frozenset({"mmap", "mprotect", "pkey_mprotect", "munmap", "madvise", "mremap", "shmat"})
DESCRIPTORS = frozenset({"dup2", "dup3", "close", "close_range"})
TARGETED = frozenset({"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"})
"""Signals (and pidfds, which signal later) whose first argument names the target process or thread."""


def _pid(value: int) -> int:
    """A pid_t argument: the low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _signal(name: str, args: list[int], tid: int, worker: Worker) -> Verdict:
    """A signal to a process of the run (the worker, its threads, what it started, even orphans the
    reaper adopted) runs; one to any other process is refused: another entry's worker of the same
    uid, the reaper, the evaluator (the filter lets signals to the worker itself through unasked)."""
    if name == "pidfd_send_signal":
        target = worker.pidfd_target(tid, args[0] & 0xFFFFFFFF)
    else:
        target = _pid(args[0])
        if name == "kill" and target < -1:  # a process group: its leader's
            target = -target
    if target is not None and target > 0 and worker.ours(target):
        return ALLOW
    return _refuse("signals", f"{name}({'all processes' if target == -1 else target})")


def decide(name: str, args: list[int], ip: int, tid: int, worker: Worker) -> Verdict:
    """The answer to one notified syscall (the filter sends only those its rules name)."""
    if name in ALWAYS:
        return _refuse(ALWAYS[name], name)
    if name in MOUNTS:
        return _refuse("mounts", name)
    if name == "seccomp":  # queries (actions, notification sizes) are harmless; a new filter is not
        return _refuse("seccomp", "seccomp(SET_MODE_FILTER)") if args[0] in (0, 1) else ALLOW
    if name == "prctl":
        if args[0] == rules.PR_SET_SECCOMP:
            return _refuse("seccomp", "prctl(PR_SET_SECCOMP)")
        return _refuse("dumpable", f"prctl(PR_SET_DUMPABLE, {args[1]})")
    if name in MEMORY:
        return _memory(name, args, ip, worker) if worker.same_mm(tid) else ALLOW
    if name in DESCRIPTORS:
        return _descriptors(name, args, worker) if worker.same_files(tid) else ALLOW
    if name in ("open", "openat"):
        return _open(name, args, tid, worker)
    if name in TARGETED or name == "pidfd_send_signal":
        return _signal(name, args, tid, worker)
    return ALLOW
