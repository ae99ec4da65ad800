"""The worker's seccomp filter: on every thread before the submission is imported, no way back.

Plain BPF where a syscall's registers decide, the gate's toggles of the core's pages and memory
syscalls whose range misses the core and the code loaded before the import included (``build``); the
rest (mprotect asking for write or execute, the key page's openings, mremap, open, an executable mmap,
the memory syscalls that may touch those ranges, a dup2/close of a channel fd, and every forbidden
syscall, so that each refusal is counted) goes to the supervisor outside the worker
(``harness.judge.worker_link.syscall_supervisor``) through the filter's listener, which this hands over and
closes. Without the supervisor those syscalls fail with ENOSYS: the rules fail closed. The rule
names and numbers are ``harness.contract.syscall_rules``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import socket
import struct

from harness.contract import syscall_rules as rules
from harness.contract.syscall_rules import Arch

# Classic BPF opcodes (linux/bpf_common.h) and where seccomp_data keeps its fields.
LD_ABS_W, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
LD_MEM, LDX_MEM, ST, ADD_K, ADD_X, JGT, JGE_X = 0x60, 0x61, 0x02, 0x04, 0x0C, 0x25, 0x3D
SUM_LOW, SUM_HIGH, SCRATCH = 0, 1, 2  # scratch words: the end of a syscall's range (two halves)
NR_AT, ARCH_AT, IP_AT = 0, 4, 8
ENOSYS = 38

NOTIFIED = ("ptrace", "process_vm_readv", "process_vm_writev", "seccomp", "userfaultfd", "mount", "umount2",
            "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
            "mount_setattr", "mprotect", "pkey_mprotect", "munmap", "madvise", "mremap", "open", "openat",
            "close_range", "tkill", "pidfd_open", "pidfd_send_signal")
"""Always to the supervisor: refused there, or decided from memory the filter cannot read."""
UNKNOWN = ("io_uring_setup", "io_uring_enter", "io_uring_register", "openat2", "remap_file_pages")
"""ENOSYS, as on a kernel without them: io_uring's requests bypass seccomp; openat2 and the old
remap_file_pages have plain replacements (openat, mmap) that the supervisor checks."""


def _arg_low(index: int) -> int:
    return 16 + 8 * index  # the low half of args[index] on a little-endian machine


def _arg_high(index: int) -> int:
    return 20 + 8 * index


class Program:
    """A classic BPF program with forward labels (jump offsets are resolved at the end)."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int, str | int, str | int]] = []  # (op, k, jt, jf); targets may be labels
        self.labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self.code.append((LD_ABS_W, offset, 0, 0))

    def op(self, op: int, k: int = 0) -> None:
        """An instruction that does not jump: scratch memory and arithmetic."""
        self.code.append((op, k, 0, 0))

    def jump(self, op: int, k: int, if_true: str | int = 0, if_false: str | int = 0) -> None:
        self.code.append((op, k, if_true, if_false))

    def ret(self, value: int) -> None:
        self.code.append((RET, value, 0, 0))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = []
        for at, (op, k, jt, jf) in enumerate(self.code):
            offsets = [self.labels[t] - at - 1 if isinstance(t, str) else t for t in (jt, jf)]
            if not all(0 <= o <= 255 for o in offsets):
                raise ValueError(f"BPF jump out of range at instruction {at}")
            out.append(struct.pack("HBBI", op, offsets[0], offsets[1], k & 0xFFFFFFFF))
        return b"".join(out)


SIGNALLERS = {"kill": "signal", "rt_sigqueueinfo": "signal", "tgkill": "signal", "rt_tgsigqueueinfo": "signal"}
"""Signals whose first argument is the target process: one to this process (``own_pid``) or, for
kill, to its own process group (0) runs unnotified; any other target is the supervisor's to look
at (a process of the run's own, or one outside it: another entry's worker, the reaper)."""


SHORTCUT = ("mprotect", "munmap", "madvise")
"""Sent to the supervisor only where the range they name could touch a shortcut range (below);
mprotect also where it asks for write or execute access."""


Toggles = tuple[int, list[tuple[int, int, tuple[int, ...]]]]
"""The gate's instruction pointer, and each (page, length, accesses) its mprotect runs unnotified with."""


def build(arch: Arch, channels: list[int], toggles: Toggles | None = None,
          own_pid: int = 0, shortcut: list[rules.Range] | None = None) -> bytes:
    """The filter for ``arch`` guarding the ``channels`` fds (dup2/dup3 onto them, close of them).
    ``toggles`` (the gate's instruction pointer; each of the core's pages, the length and the accesses
    its mprotect from there runs unnotified with): each page closed (no access, 4096 bytes). Every
    opening, the key page's and the call-state page's, stays notified: the supervisor counts them and
    the parent compares the counts. ``shortcut``
    (sorted page-aligned ranges holding the core's pages and the code loaded before the import): a
    munmap, madvise, fixed non-executable mmap or mprotect to read or no access whose range lies
    outside all of them runs unnotified (docs/security.md, "What the filter decides itself");
    None: every one goes to the supervisor."""
    nr = arch.numbers
    p = Program()
    p.load(ARCH_AT)
    p.jump(JEQ, arch.audit, 0, "kill")  # another ABI's numbers mean other syscalls
    p.load(NR_AT)
    if arch.name == "x86_64":
        p.jump(JGE, rules.X32_SYSCALL_BIT, "kill", 0)
    checked = "notify" if shortcut is None else "mprotect"  # an mprotect that is not the gate's toggle
    if toggles:
        p.jump(JEQ, nr["mprotect"], "toggle", 0)
    for name in NOTIFIED:
        if name in nr and not (shortcut is not None and name in SHORTCUT):
            p.jump(JEQ, nr[name], "notify", 0)
    for name in UNKNOWN:
        p.jump(JEQ, nr[name], "enosys", 0)
    branches = {"mmap": "mmap", "prctl": "prctl", "personality": "personality", "shmat": "shmat", "close": "close",
                "dup2": "dup", "dup3": "dup", **SIGNALLERS}
    if shortcut is not None:
        branches.update(mprotect="mprotect", munmap="outside", madvise="outside")
    for name, target in branches.items():
        if name in nr:
            p.jump(JEQ, nr[name], target, 0)
    p.ret(rules.RET_ALLOW)
    p.label("mmap")  # executable, or fixed (it may replace a mapping): the supervisor looks
    p.load(_arg_low(2))
    p.jump(JSET, rules.PROT_EXEC, "notify", 0)
    p.load(_arg_low(3))
    p.jump(JSET, rules.MAP_FIXED, "notify" if shortcut is None else "outside", "allow")
    p.label("prctl")
    p.load(_arg_low(0))
    p.jump(JEQ, rules.PR_SET_SECCOMP, "notify", 0)
    p.jump(JEQ, rules.PR_SET_DUMPABLE, 0, "allow")
    p.load(_arg_low(1))  # the kernel reads the whole 64-bit value: both halves must be zero
    p.jump(JEQ, 0, 0, "notify")
    p.load(_arg_high(1))
    p.jump(JEQ, 0, "allow", "notify")
    p.label("personality")
    p.load(_arg_low(0))
    p.jump(JEQ, 0xFFFFFFFF, "allow", 0)  # the query
    p.jump(JSET, rules.READ_IMPLIES_EXEC, "notify", "allow")
    p.label("shmat")
    p.load(_arg_low(2))
    p.jump(JSET, rules.SHM_REMAP | rules.SHM_EXEC, "notify", "allow")
    p.label("signal")  # pid_t: the kernel reads the low half (0 for tgkill is refused by the kernel itself)
    p.load(_arg_low(0))
    p.jump(JEQ, own_pid, "allow", 0)
    p.jump(JEQ, 0, "allow", "notify")
    for name, index in (("dup", 1), ("close", 0)):
        p.label(name)
        p.load(_arg_low(index))  # fds are unsigned ints: the kernel reads the low half only
        for fd in channels:
            p.jump(JEQ, fd, "notify", 0)
        p.ret(rules.RET_ALLOW)
    if toggles:
        p.label("toggle")  # every check must hold, else the supervisor (or the shortcut) decides
        ip = toggles[0]  # and the length's and protection's high halves zero (the kernel reads all 64 bits)
        for offset, value in ((IP_AT, ip & 0xFFFFFFFF), (IP_AT + 4, ip >> 32), (_arg_high(1), 0), (_arg_high(2), 0)):
            p.load(offset)
            p.jump(JEQ, value, 0, checked)
        for at, (page, length, accesses) in enumerate(toggles[1]):
            other = f"toggle{at + 1}" if at + 1 < len(toggles[1]) else checked
            for offset, value in ((_arg_high(0), page >> 32), (_arg_low(0), page & 0xFFFFFFFF), (_arg_low(1), length)):
                p.load(offset)
                p.jump(JEQ, value, 0, other)
            p.load(_arg_low(2))
            for access in accesses:
                p.jump(JEQ, access, "allow", 0)
            p.jump(JEQ, 0, other, other)
            p.label(f"toggle{at + 1}")
    if shortcut is not None:
        p.label("mprotect")  # to read or no access only (the kernel reads all 64 bits of the protection)
        p.load(_arg_high(2))
        p.jump(JEQ, 0, 0, "notify")
        p.load(_arg_low(2))
        p.jump(JSET, 0xFFFFFFFF & ~rules.PROT_READ, "notify", "outside")
    p.label("notify")
    p.ret(rules.RET_USER_NOTIF)
    p.label("allow")
    p.ret(rules.RET_ALLOW)
    p.label("enosys")
    p.ret(rules.RET_ERRNO | ENOSYS)
    p.label("kill")
    p.ret(rules.RET_KILL_PROCESS)
    if shortcut is not None:
        _outside(p, shortcut)
    return p.assemble()


def _outside(p: Program, shortcut: list[rules.Range]) -> None:
    """Allow when [args[0], args[0] + args[1]) lies outside every shortcut range, else notify.
    Whole pages: the kernel acts on [start rounded down, end rounded up), and for page-aligned
    bounds [s, e) that misses [s, e) exactly when start >= e or start + length <= s. A length of 4 GiB
    or more, or a start above 2**63, is notified (so the end's high half cannot wrap)."""
    p.label("outside")  # the sum first: the kernel's checker wants scratch stored before any jump away
    p.load(_arg_high(0))
    p.op(ST, SUM_HIGH)
    p.load(_arg_low(1))
    p.op(ST, SCRATCH)
    p.op(LDX_MEM, SCRATCH)
    p.load(_arg_low(0))
    p.op(ADD_X)
    p.op(ST, SUM_LOW)
    p.jump(JGE_X, 0, "summed", 0)  # the low half's sum is below the length's: it carried
    p.op(LD_MEM, SUM_HIGH)
    p.op(ADD_K, 1)
    p.op(ST, SUM_HIGH)
    p.label("summed")
    p.load(_arg_high(1))
    p.jump(JEQ, 0, 0, "far")
    p.load(_arg_high(0))
    p.jump(JGE, 0x80000000, "far", "ranges")
    p.label("far")
    p.ret(rules.RET_USER_NOTIF)
    p.label("ranges")
    for at, (start, end) in enumerate(shortcut):  # sorted and disjoint: before one is before the rest
        after, below, hit, clear = f"range{at + 1}", f"below{at}", f"hit{at}", f"clear{at}"
        p.load(_arg_high(0))  # start >= end of the range: past it, on to the next
        p.jump(JGT, end >> 32, after, 0)
        p.jump(JEQ, end >> 32, 0, below)
        p.load(_arg_low(0))
        p.jump(JGE, end & 0xFFFFFFFF, after, below)
        p.label(below)  # start + length <= start of the range: before it
        p.op(LD_MEM, SUM_HIGH)
        p.jump(JGT, start >> 32, hit, 0)
        p.jump(JEQ, start >> 32, 0, clear)
        p.op(LD_MEM, SUM_LOW)
        p.jump(JGT, start & 0xFFFFFFFF, hit, clear)
        p.label(hit)
        p.ret(rules.RET_USER_NOTIF)
        p.label(clear)
        p.ret(rules.RET_ALLOW)
        p.label(after)
    p.ret(rules.RET_ALLOW)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _install(program: bytes) -> int:
    """The filter on every thread of this process; returns its listener fd."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    number = rules.this_arch().numbers["seccomp"]  # type: ignore[union-attr]
    if libc.prctl(rules.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) refused")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Fprog(len(program) // 8, ctypes.addressof(buffer))
    flags = rules.FLAG_TSYNC | rules.FLAG_NEW_LISTENER | rules.FLAG_TSYNC_ESRCH
    listener = libc.syscall(number, rules.SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(fprog))
    if listener < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"seccomp(SECCOMP_SET_MODE_FILTER) refused: {os.strerror(code)}")
    return listener


def core_gate() -> list[int] | None:
    """What the compiled core says about its pages (``nvfp4_gate_describe``, syscall_gate.c): the
    gate's instruction pointer, the core's image, its call-state page, its key page; None without
    a core."""
    try:
        from harness.worker import _sealed
    except ImportError:
        return None
    describe = ctypes.CDLL(_sealed.__file__).nvfp4_gate_describe
    out = (ctypes.c_ulonglong * 64)()
    count = describe(out, len(out))
    return list(out[:count]) if count > 0 else None


def gate_toggles(gate: list[int] | None) -> Toggles | None:
    """The gate's mprotects the filter lets through (build's ``toggles``), from ``core_gate``'s list:
    the call-state page (gate[3]) and each one-page key page to no access."""
    if not gate or len(gate) < 5 or not gate[0]:
        return None
    pages: list[tuple[int, int, tuple[int, ...]]] = []
    if gate[3]:
        pages.append((gate[3], 4096, (0,)))
    pages += [(start, 4096, (0,)) for start, end in zip(gate[5::2], gate[6::2]) if end - start == 4096]
    return (gate[0], pages) if pages else None


def shortcut_ranges(gate: list[int] | None) -> list[rules.Range] | None:
    """What the filter's shortcut keeps for the supervisor: the core's image and gate pages (as
    ``gate`` lists them) and every executable mapping of this process now, the code the supervisor
    freezes when it arms (it checks that each lies inside these: syscall_supervisor.Guarded); None
    where /proc/self/maps cannot be read (then every such syscall is notified)."""
    try:
        with open("/proc/self/maps") as handle:
            code = rules.executable_ranges(handle.read())
    except OSError:
        return None
    core = [(gate[i], gate[i + 1]) for i in range(1, len(gate) - 1, 2)] if gate else []
    return rules.cover(code + [r for r in core if r[1] > r[0]])


def install(supervisor_fd: int, channels: list[int]) -> str:
    """Install the filter and hand its listener to the supervisor over ``supervisor_fd`` (closed
    here in every case); returns the line the worker's sandbox report shows. The supervisor, not
    this line, tells the parent whether the rules are on."""
    with socket.socket(fileno=supervisor_fd) as link:
        why = rules.unavailable()
        arch = rules.this_arch()
        if why or arch is None:
            link.send(rules.report_line("off", why=why or "no syscall table"))
            return f"off ({why})"
        gate = core_gate()
        shortcut = shortcut_ranges(gate)
        message = rules.arm_message(channels, gate, shortcut)
        program = build(arch, channels, gate_toggles(gate), os.getpid(), shortcut)
        collecting = gc.isenabled()
        gc.disable()  # nothing may free memory (munmap, a notified syscall) before the hand-over
        listener = -1
        try:
            listener = _install(program)
            socket.send_fds(link, [message], [listener])
        except OSError as error:
            with contextlib.suppress(OSError):
                link.send(rules.report_line("off", why=str(error)))
            return f"off ({error})"
        finally:
            if listener >= 0:  # the supervisor's copy is the only one: unanswered, its syscalls fail
                os.close(listener)
            if collecting:
                gc.enable()
    return "handed to the supervisor"
