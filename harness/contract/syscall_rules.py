"""The syscall rules a submission runs under, shared by the worker's filter and its supervisor.

The worker installs a seccomp filter on itself before the submission is imported
(``harness.worker.syscall_filter``); what the filter cannot decide from a syscall's registers
alone it hands to the supervisor, a process outside the worker (``harness.judge.worker_link.syscall_supervisor``),
which answers each such syscall and tells the parent about every refusal
(``harness.judge.worker_link.supervision``). Both sides take the rules, the syscall numbers and the two small
messages between them from this module. docs/security.md says what each rule stops.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    name: str
    what: str
    rejects: bool  # a hit rejects the run; False: refused and counted (libraries probe it and fall back)


RULES = (
    Rule("ptrace", "no ptrace", True),
    Rule("process_vm", "no process_vm_readv/writev", True),
    Rule("dumpable", "no prctl(PR_SET_DUMPABLE) back on", True),
    Rule("seccomp", "no filter of the submission's own (it could take the supervisor's syscalls)", True),
    Rule("read_implies_exec", "no READ_IMPLIES_EXEC personality", True),
    Rule("userfaultfd", "no userfaultfd", True),
    Rule("mounts", "no mount, chroot or pivot_root", True),
    Rule("proc_mem", "no open of /proc/<pid>/mem, pagemap or map_files", True),
    Rule("channels", "no dup2/dup3 onto, or close of, the worker's channel fds (sockets: never reopened)", True),
    Rule("core", "no mprotect/mmap/munmap/madvise/mremap on the core's pages but its gate's own toggles", True),
    Rule("code", "W^X: code never becomes writable; code loaded before the import is never replaced", True),
    Rule("wx", "no writable+executable or anonymous executable mapping", False),
    Rule("unmap_code", "code loaded before the import is not unmapped", False),
    Rule("io_uring", "no io_uring (its requests bypass seccomp): ENOSYS", False),
    Rule("signals", "no signal to a process outside the run (another entry's worker, the reaper, the evaluator)",
         False),
)
RULE_NAMES = tuple(rule.name for rule in RULES)
REJECTING = frozenset(rule.name for rule in RULES if rule.rejects)

MIN_KERNEL = (5, 7)
"""seccomp user notification (5.0), its CONTINUE answer (5.5) and a listener installed on every
thread at once (SECCOMP_FILTER_FLAG_TSYNC_ESRCH, 5.7): without the last, threads the driver
started before the filter would run unfiltered."""

# seccomp(2) and its filter, from linux/seccomp.h and linux/filter.h.
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_GET_NOTIF_SIZES = 3
FLAG_TSYNC, FLAG_NEW_LISTENER, FLAG_TSYNC_ESRCH = 1, 8, 16
RET_KILL_PROCESS, RET_ERRNO, RET_USER_NOTIF, RET_ALLOW = 0x80000000, 0x00050000, 0x7FC00000, 0x7FFF0000
PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE, PR_SET_SECCOMP = 38, 4, 22
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_FIXED, MAP_ANONYMOUS = 0x10, 0x20
MREMAP_FIXED = 2
SHM_REMAP, SHM_EXEC = 0o40000, 0o100000
READ_IMPLIES_EXEC = 0x0400000
CLOSE_RANGE_CLOEXEC = 4
AT_FDCWD = -100
X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class Arch:
    name: str
    audit: int  # seccomp_data.arch of this ABI; any other (i386's int 0x80, arm32) kills the worker
    numbers: dict[str, int]


# Syscalls the filter names, by architecture (unistd_64.h; asm-generic/unistd.h for aarch64, which
# has no open and no dup2).
_COMMON = {"pidfd_send_signal": 424, "pidfd_open": 434,
           "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
           "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
           "close_range": 436, "openat2": 437, "mount_setattr": 442}
ARCHES = {
    "x86_64": Arch("x86_64", 0xC000003E, {
        **_COMMON, "open": 2, "close": 3, "mmap": 9, "mprotect": 10, "munmap": 11, "mremap": 25, "madvise": 28,
        "shmat": 30, "dup2": 33, "ptrace": 101, "personality": 135, "pivot_root": 155, "prctl": 157, "chroot": 161,
        "mount": 165, "umount2": 166, "remap_file_pages": 216, "openat": 257, "dup3": 292, "process_vm_readv": 310,
        "process_vm_writev": 311, "kcmp": 312, "seccomp": 317, "userfaultfd": 323, "pkey_mprotect": 329,
        "kill": 62, "rt_sigqueueinfo": 129, "tkill": 200, "tgkill": 234, "rt_tgsigqueueinfo": 297}),
    "aarch64": Arch("aarch64", 0xC00000B7, {
        **_COMMON, "dup3": 24, "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51, "openat": 56, "close": 57,
        "ptrace": 117, "prctl": 167, "personality": 92, "shmat": 196, "munmap": 215, "mremap": 216, "mmap": 222,
        "mprotect": 226, "madvise": 233, "remap_file_pages": 234, "process_vm_readv": 270, "process_vm_writev": 271,
        "kcmp": 272, "seccomp": 277, "userfaultfd": 282, "pkey_mprotect": 288,
        "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240}),
}


def this_arch() -> Arch | None:
    """The table for this machine, or None (another architecture, or a big-endian one: the filter
    reads the low half of each 64-bit argument at the offset of a little-endian machine)."""
    if sys.byteorder != "little":
        return None
    return ARCHES.get(platform.machine())


def kernel_release() -> tuple[int, int]:
    try:
        major, minor = os.uname().release.split(".")[:2]
        return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)
    except (ValueError, AttributeError):
        return (0, 0)


def unavailable() -> str | None:
    """Why this machine cannot run the supervised filter (one line with the fix), or None."""
    if not sys.platform.startswith("linux"):
        return "not Linux: seccomp is Linux's"
    if this_arch() is None:
        return (f"no syscall table for {platform.machine()} ({sys.byteorder}-endian): the filter is built for "
                "x86_64 and aarch64; run ranked evaluations on one of those")
    release = kernel_release()
    if release < MIN_KERNEL:
        return (f"Linux {os.uname().release} lacks seccomp user notification on every thread (needs "
                f"{MIN_KERNEL[0]}.{MIN_KERNEL[1]}, SECCOMP_FILTER_FLAG_TSYNC_ESRCH): run on a newer kernel")
    try:
        with open("/proc/sys/kernel/seccomp/actions_avail") as handle:
            actions = handle.read().split()
    except OSError:
        return ("this kernel has no seccomp filters (/proc/sys/kernel/seccomp missing): build it with "
                "CONFIG_SECCOMP_FILTER")
    if "user_notif" not in actions:
        return ("this kernel's seccomp has no user notification (actions_avail lacks user_notif): run on Linux "
                "5.7 or later")
    return None


Range = tuple[int, int]
SHORTCUT_RANGES = 256
"""At most this many ranges in the filter's shortcut (syscall_filter.build): the core's pages and the
code loaded before the import (a worker with torch and CUDA has a hundred or so), neighbours merged
where there are more. Not fewer: a gap merged in is a hole between libraries where the kernel places
new small mappings, whose munmaps would all be notified again. Each range is 12 BPF instructions
(the kernel allows 4096), run only for an mprotect, munmap, madvise or fixed mmap at or above it."""


def executable_ranges(maps: str) -> list[Range]:
    """[start, end) of every executable mapping in a /proc/<pid>/maps text."""
    found = []
    for line in maps.splitlines():
        fields = line.split(maxsplit=2)
        if len(fields) >= 2 and "x" in fields[1]:
            start, end = (int(part, 16) for part in fields[0].split("-"))
            found.append((start, end))
    return found


def cover(ranges: list[Range], limit: int = SHORTCUT_RANGES) -> list[Range]:
    """At most ``limit`` sorted ranges whose union holds every one of ``ranges``: touching ones
    joined, then the two with the smallest gap between them, until few enough. Merging only
    widens what the filter sends to the supervisor (a gap merged in is asked about, not let through)."""
    merged: list[Range] = []
    pages = ((start & ~0xFFF, (end + 0xFFF) & ~0xFFF) for start, end in ranges if end > start)
    for start, end in sorted(pages):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    while len(merged) > max(1, limit):
        at = min(range(len(merged) - 1), key=lambda i: merged[i + 1][0] - merged[i][1])
        merged[at:at + 2] = [(merged[at][0], merged[at + 1][1])]
    return merged


def uncovered(ranges: list[Range], cover_ranges: list[Range]) -> list[Range]:
    """Those of ``ranges`` that no single range of ``cover_ranges`` holds whole (merged covers are
    disjoint and gapped, so a range held by their union lies in one of them)."""
    return [r for r in ranges if not any(start <= r[0] and r[1] <= end for start, end in cover_ranges)]


# What travels between them: one message from the worker to the supervisor (with the listener fd
# beside it), then one JSON line per event from the supervisor to the parent.
ARM_BYTES = 1 << 16


def arm_message(channels: list[int], gate: list[int] | None, shortcut: list[Range] | None = None) -> bytes:
    """The worker's hand-over, before the import: its channel fds, what the core told it (the
    gate's instruction pointer, the core's image, the gate's pages), or None without a core, and the
    ranges outside which the filter decides memory syscalls itself (None: it sends them all)."""
    return json.dumps({"channels": channels, "gate": gate, "shortcut": shortcut}).encode()


def report_line(event: str, **fields: Any) -> bytes:
    return (json.dumps({"event": event, **fields}) + "\n").encode()
