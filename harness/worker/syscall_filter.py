"""The worker's seccomp filter: on every thread before the submission is imported, no way back.

Plain BPF where a syscall's registers decide; the rest (every mprotect but the core's toggling of
its call-state page, munmap, madvise, mremap, open, a fixed or executable mmap, a dup2/close of a
channel fd, and every forbidden syscall, so that each refusal is counted) goes to the supervisor
outside the worker
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


def build(arch: Arch, channels: list[int], state_toggle: tuple[int, int] | None = None, own_pid: int = 0) -> bytes:
    """The filter for ``arch`` guarding the ``channels`` fds (dup2/dup3 onto them, close of them).
    ``state_toggle`` (the gate's instruction pointer, the core's call-state page): its mprotect of
    that page to read-write or no access runs unnotified, since it happens inside the timed window
    (a round trip to the supervisor there would be host time before the end event)."""
    nr = arch.numbers
    p = Program()
    p.load(ARCH_AT)
    p.jump(JEQ, arch.audit, 0, "kill")  # another ABI's numbers mean other syscalls
    p.load(NR_AT)
    if arch.name == "x86_64":
        p.jump(JGE, rules.X32_SYSCALL_BIT, "kill", 0)
    if state_toggle:
        p.jump(JEQ, nr["mprotect"], "state_toggle", 0)
    for name in NOTIFIED:
        if name in nr:
            p.jump(JEQ, nr[name], "notify", 0)
    for name in UNKNOWN:
        p.jump(JEQ, nr[name], "enosys", 0)
    branches = {"mmap": "mmap", "prctl": "prctl", "personality": "personality", "shmat": "shmat", "close": "close",
                "dup2": "dup", "dup3": "dup", **SIGNALLERS}
    for name, target in branches.items():
        if name in nr:
            p.jump(JEQ, nr[name], target, 0)
    p.ret(rules.RET_ALLOW)
    p.label("mmap")  # executable, or fixed (it may replace a mapping): the supervisor looks
    p.load(_arg_low(2))
    p.jump(JSET, rules.PROT_EXEC, "notify", 0)
    p.load(_arg_low(3))
    p.jump(JSET, rules.MAP_FIXED, "notify", "allow")
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
    if state_toggle:
        p.label("state_toggle")  # every check must hold, else the supervisor decides
        for offset, value in ((IP_AT, state_toggle[0]), (_arg_low(0), state_toggle[1]), (_arg_low(1), 4096)):
            p.load(offset)
            p.jump(JEQ, value & 0xFFFFFFFF, 0, "notify")
            p.load(offset + 4)
            p.jump(JEQ, value >> 32, 0, "notify")
        p.load(_arg_high(2))
        p.jump(JEQ, 0, 0, "notify")
        p.load(_arg_low(2))
        p.jump(JEQ, 0, "allow", 0)
        p.jump(JEQ, rules.PROT_READ | rules.PROT_WRITE, "allow", "notify")
    p.label("notify")
    p.ret(rules.RET_USER_NOTIF)
    p.label("allow")
    p.ret(rules.RET_ALLOW)
    p.label("enosys")
    p.ret(rules.RET_ERRNO | ENOSYS)
    p.label("kill")
    p.ret(rules.RET_KILL_PROCESS)
    return p.assemble()


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
        message = rules.arm_message(channels, gate)
        program = build(arch, channels, (gate[0], gate[3]) if gate and len(gate) > 3 and gate[0] and gate[3] else None,
                        os.getpid())
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
