"""The syscall supervisor: answers the worker's notified syscalls from outside it, and tells the parent.

It runs as a thread of ``harness.judge.worker_link.worker_reaper`` (the evaluator's uid, root on the GPU
hosts: the worker, uid 65534, can neither signal, trace nor outlive it). The worker hands it the
listener of its seccomp filter before the submission is imported (``harness.worker.syscall_filter``).
After that, every syscall the filter notifies waits here until ``harness.judge.worker_link.syscall_policy``
has decided it. Each refusal, each opening of the core's key page and a running count go to the
parent as JSON lines (``harness.judge.worker_link.supervision``), written before the syscall is answered, so
the parent has read a refusal before any reply of the worker that followed it. If this thread
ends, the listener closes and every notified syscall fails with ENOSYS: the rules fail closed.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import socket
import struct
import time
from typing import Any

from harness.contract import proc_mounts
from harness.contract import syscall_rules as rules
from harness.judge.worker_link import proc_paths, process_tree
from harness.judge.worker_link.syscall_policy import KEY_ACCESS, PAGE, STATE_ACCESS, Range, Verdict, Worker, decide

REPORT_EVERY = 256  # notifications between two running counts
KCMP_VM, KCMP_FILES = 1, 2
USER_NOTIF_FLAG_CONTINUE = 1


class _Data(ctypes.Structure):
    _fields_ = [("nr", ctypes.c_int), ("arch", ctypes.c_uint32), ("ip", ctypes.c_uint64),
                ("args", ctypes.c_uint64 * 6)]


class _Notif(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("pid", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("data", _Data),
                ("spare", ctypes.c_uint8 * 64)]  # room for a larger struct of a newer kernel


class _Resp(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("val", ctypes.c_int64), ("error", ctypes.c_int32), ("flags", ctypes.c_uint32)]


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _ioctl(direction: int, number: int, size: int) -> int:
    return (direction << 30) | (size << 16) | (ord("!") << 8) | number


NOTIF_RECV = _ioctl(3, 0, 80)  # SECCOMP_IOWR(0, struct seccomp_notif)
NOTIF_SEND = _ioctl(3, 1, ctypes.sizeof(_Resp))
NOTIF_ID_VALID = _ioctl(1, 2, 8)
NOTIF_SET_FLAGS = _ioctl(1, 4, 8)  # SECCOMP_IOW(4, __u64), Linux 6.6
SYNC_WAKE_UP = 1  # SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.process_vm_readv.restype = ctypes.c_ssize_t


def _executable(pid: int) -> list[Range]:
    """[start, end) of every executable mapping of ``pid`` (its /proc/<pid>/maps)."""
    with open(f"/proc/{pid}/maps") as handle:
        return rules.executable_ranges(handle.read())


def _read_string(tid: int, address: int, limit: int = 4096) -> str | None:
    """A NUL-terminated string from ``tid``'s memory, read page by page; None if unreadable or too long."""
    data = b""
    while len(data) < limit:
        room = min(PAGE - (address + len(data)) % PAGE, limit - len(data))
        buffer = ctypes.create_string_buffer(room)
        local, remote = _Iovec(ctypes.addressof(buffer), room), _Iovec(address + len(data), room)
        if _libc.process_vm_readv(tid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) != room:
            return None
        chunk = buffer.raw
        if b"\0" in chunk:
            return (data + chunk[:chunk.index(b"\0")]).decode("utf-8", "surrogateescape")
        data += chunk
    return None


class Guarded:
    """The live worker behind ``syscall_policy.Worker``: its maps, fd table and memory, read as root."""

    def __init__(self, pid: int, arm: dict[str, Any]) -> None:
        self.pid = pid
        self.kcmp = rules.this_arch().numbers["kcmp"]  # type: ignore[union-attr]
        self.has_kcmp = _libc.syscall(self.kcmp, pid, pid, KCMP_VM, 0, 0) == 0  # CONFIG_KCMP, and root
        self._code: list[Range] | None = None
        gate = [int(x) for x in arm.get("gate") or []]
        channels = [int(fd) for fd in arm.get("channels", [])]
        with open(f"/proc/{pid}/mountinfo") as handle:
            roots = proc_mounts.proc_roots(handle.read())
        pages = {(gate[i], gate[i + 1]): KEY_ACCESS for i in range(5, len(gate) - 1, 2)}
        if len(gate) >= 5 and gate[3]:
            pages[gate[3], gate[4]] = STATE_ACCESS
        self.worker = Worker(
            pid=pid, gate_ip=gate[0] if gate else 0, core=([(gate[1], gate[2])] if gate else []) + list(pages),
            gate_pages=pages, frozen=_executable(pid), channels=frozenset(channels), roots=roots,
            same_mm=lambda tid: self._shares(tid, KCMP_VM), same_files=lambda tid: self._shares(tid, KCMP_FILES),
            executable=self.executable, read_path=_read_string, lookup=self.lookup,
            ours=self.ours, pidfd_target=process_tree.pidfd_target)
        shortcut = arm.get("shortcut")
        if shortcut is not None:  # what the filter decides itself must keep every guarded range notified
            missed = rules.uncovered(self.worker.core + self.worker.frozen, [(int(a), int(b)) for a, b in shortcut])
            if missed:
                raise RuntimeError(f"the filter's shortcut leaves {missed[0][0]:#x}-{missed[0][1]:#x} unguarded")
        # In a PID namespace of its own the worker's pids are not ours to read, and its signals cannot
        # leave the namespace anyway: the rule then lets them through.
        self.own_namespace = not process_tree.same_pid_namespace(pid)

    def ours(self, target: int) -> bool:
        """A process of this run: below the reaper, whose thread this supervisor is."""
        return self.own_namespace or process_tree.below(target, os.getpid())

    def _shares(self, tid: int, what: int) -> bool:
        """Whether ``tid`` shares the worker's memory (KCMP_VM) or fd table (KCMP_FILES): its threads
        do, and so does a child made with CLONE_VM (vfork) or CLONE_FILES. A kernel without kcmp:
        the worker's threads only (docs/security.md). A task that vanished: yes (its answer is lost)."""
        if self._thread(tid):
            return True
        if not self.has_kcmp:
            return False
        return _libc.syscall(self.kcmp, self.pid, tid, what, 0, 0) in (0, -1)  # 0: the same; 1-3: not

    def _thread(self, tid: int) -> bool:
        return tid == self.pid or os.path.exists(f"/proc/{self.pid}/task/{tid}")

    def executable(self) -> list[Range]:
        if self._code is None:
            self._code = _executable(self.pid)
        return self._code

    def forget_code(self) -> None:
        self._code = None

    def lookup(self, tid: int, dirfd: int, path: str) -> list[str]:
        base = proc_paths.base_of(tid, dirfd, path)
        if base is None:
            return []
        return proc_paths.walk(tid, self.pid if self._thread(tid) else _tgid(tid), base, path, self.worker.roots)


def _tgid(tid: int) -> int:
    try:
        with open(f"/proc/{tid}/status") as handle:
            for line in handle:
                if line.startswith("Tgid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return tid


class Reporter:
    """The running record the parent reads: one JSON line per change worth telling."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.state: dict[str, Any] = {"state": "starting", "notifications": 0, "handled_ms": 0.0, "unlocks": 0,
                                      "state_opens": 0, "refused": {}, "details": {}, "by_syscall": {}}

    def write(self, **changes: Any) -> None:
        self.state.update(changes)
        line = rules.report_line("state", **self.state)
        with contextlib.suppress(OSError):  # the parent is gone: nothing left to tell
            view = memoryview(line)
            while view:
                view = view[os.write(self.fd, view):]

    def handled(self, verdict: Verdict, seconds: float, kind: str = "") -> None:
        """One answered notification; ``kind`` (the syscall and what made the filter send it) is
        counted in ``by_syscall``, the mix the wall-time line's count is made of."""
        state = self.state
        state["notifications"] += 1
        if kind:
            state["by_syscall"][kind] = state["by_syscall"].get(kind, 0) + 1
        state["handled_ms"] += seconds * 1e3
        tell = verdict.unlock or verdict.state_open or state["notifications"] % REPORT_EVERY == 0
        state["unlocks"] += verdict.unlock
        state["state_opens"] += verdict.state_open
        if verdict.rule:
            state["refused"][verdict.rule] = state["refused"].get(verdict.rule, 0) + 1
            if verdict.rule not in state["details"]:
                state["details"][verdict.rule] = verdict.detail[:300]
                tell = True
        if tell:
            self.write()


def receive(link: socket.socket) -> tuple[int | None, dict[str, Any], int]:
    """The worker's hand-over: (listener fd or None, its message, the sender's pid)."""
    credentials = struct.calcsize("3i")
    data, ancillary, _, _ = link.recvmsg(rules.ARM_BYTES, socket.CMSG_SPACE(4) + socket.CMSG_SPACE(credentials))
    listener, pid = None, 0
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS and len(payload) >= 4:
            listener = struct.unpack_from("i", payload)[0]
        elif level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(payload) >= credentials:
            pid = struct.unpack_from("3i", payload)[0]
    if not data:
        return listener, {"event": "off", "why": "the worker ended before it armed the filter"}, pid
    return listener, json.loads(data), pid


def sync_wake_ups(listener: int) -> bool:
    """Have the kernel wake this thread for a notification, and the worker for its answer, on the CPU that
    hands it over (Linux 6.6), as a synchronous call would: otherwise each of the two hand-overs wakes a
    thread on another CPU, which on a virtual machine's idle CPU took most of a round trip (55-70 us
    against 12 us on this project's 2-CPU VM, docs/security.md). Best effort: an older kernel refuses it and
    the round trips stay as they were."""
    return _libc.ioctl(listener, ctypes.c_ulong(NOTIF_SET_FLAGS), ctypes.c_ulong(SYNC_WAKE_UP)) == 0


def answer(listener: int, notification: _Notif, verdict: Verdict) -> None:
    reply = _Resp(notification.id, 0, -verdict.error if verdict.error else 0,
                  0 if verdict.error else USER_NOTIF_FLAG_CONTINUE)
    _libc.ioctl(listener, ctypes.c_ulong(NOTIF_SEND), ctypes.byref(reply))  # ENOENT: the caller is gone


def still_waiting(listener: int, notification: _Notif) -> bool:
    """Whether the notified syscall still waits (its thread was not killed, its tid not reused)."""
    ident = ctypes.c_uint64(notification.id)
    return _libc.ioctl(listener, ctypes.c_ulong(NOTIF_ID_VALID), ctypes.byref(ident)) == 0


def kind(name: str, args: list[int]) -> str:
    """The syscall and the argument pattern that sent it here: its access for mprotect and mmap."""
    if name in ("mmap", "mprotect", "pkey_mprotect"):
        prot = args[2]
        access = "".join(letter for bit, letter in ((1, "R"), (2, "W"), (4, "X")) if prot & bit) or "NONE"
        fixed = " fixed" if name == "mmap" and args[3] & rules.MAP_FIXED else ""
        return f"{name} {access}{fixed}"
    return name


def supervise(listener: int, guarded: Guarded, reporter: Reporter) -> str:
    """Answer notifications until no task uses the filter any more; returns why it stopped."""
    names = {number: name for name, number in rules.this_arch().numbers.items()}  # type: ignore[union-attr]
    notification = _Notif()
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    while True:
        events = dict(poller.poll())
        if not events.get(listener, 0) & select.POLLIN:
            return "the worker's tasks are gone"
        ctypes.memset(ctypes.byref(notification), 0, ctypes.sizeof(notification))
        if _libc.ioctl(listener, ctypes.c_ulong(NOTIF_RECV), ctypes.byref(notification)) != 0:
            continue  # interrupted, or the caller died before it was received
        started = time.perf_counter()
        data = notification.data
        args = list(data.args)
        name = names.get(data.nr, "")
        verdict = decide(name, args, data.ip, notification.pid, guarded.worker)
        if verdict.rule == "code":  # read afresh: a munmap or fixed mmap the filter let through may have
            guarded.forget_code()   # removed that code since (never added one: every executable mapping is notified)
            verdict = decide(name, args, data.ip, notification.pid, guarded.worker)
        if not still_waiting(listener, notification):
            continue
        reporter.handled(verdict, time.perf_counter() - started, kind(name, args))  # told before it is answered
        answer(listener, notification, verdict)
        if verdict.changed_code:
            guarded.forget_code()
        if name in ("open", "openat") and not verdict.error:
            _recheck(name, args, notification.pid, guarded, reporter)


def _recheck(name: str, args: list[int], tid: int, guarded: Guarded, reporter: Reporter) -> None:
    """After an open was let through: its path read again. A path that now names what the rules
    refuse was rewritten while it was checked (a race for the kernel's own read): rejected."""
    again = decide(name, args, 0, tid, guarded.worker)
    if again.rule:
        reporter.handled(Verdict(again.error, again.rule, again.detail + ": the path changed while it was checked"), 0)


def prepare(link_fd: int) -> None:
    """Before the worker exists: its hand-over will carry its pid (SCM_CREDENTIALS, set by the kernel)."""
    link = socket.socket(fileno=link_fd)
    link.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    link.detach()  # the fd stays open, for serve


def serve(link_fd: int, report_fd: int) -> None:
    """The supervisor thread: take the listener, arm, answer until the worker is gone."""
    reporter = Reporter(report_fd)
    listener = None
    try:
        with socket.socket(fileno=link_fd) as link:
            listener, message, pid = receive(link)
        if listener is None or message.get("event") == "off":
            reporter.write(state="off", why=str(message.get("why", "the worker sent no listener"))[:300])
            return
        guarded = Guarded(pid, message)
        reporter.write(state="armed", rules=list(rules.RULE_NAMES), gate_pages=len(guarded.worker.gate_pages),
                       state_page=STATE_ACCESS in guarded.worker.gate_pages.values(),
                       frozen_ranges=len(guarded.worker.frozen), kcmp=guarded.has_kcmp,
                       sync_wake=sync_wake_ups(listener))
        why = supervise(listener, guarded, reporter)
        reporter.write(state="ended", why=why)
    except Exception as error:  # a fault here: the listener closes below and the rules fail closed
        reporter.write(state="failed", why=f"{type(error).__name__}: {error}"[:300])
    finally:
        if listener is not None:
            os.close(listener)
        os.close(report_fd)

