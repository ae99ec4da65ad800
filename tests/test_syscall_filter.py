"""The worker's seccomp filter: its BPF decisions (run here by a small interpreter, for every
architecture it is built for), and on this kernel: fail closed without a supervisor, and death for a
syscall of another ABI."""

import ctypes
import mmap
import os
import platform
import signal
import socket
import struct
import tempfile
import threading

import pytest

from harness.contract import syscall_rules as rules
from harness.judge.worker_link import syscall_supervisor
from harness.worker import syscall_filter

CHANNELS = [1001, 1007, 1009]  # numbers no real fd of a test process has
ALLOW, NOTIFY, KILL = rules.RET_ALLOW, rules.RET_USER_NOTIF, rules.RET_KILL_PROCESS
ENOSYS = rules.RET_ERRNO | 38


def run_bpf(program: bytes, nr: int, args=(0, 0, 0, 0, 0, 0), arch: int = 0, ip: int = 0) -> int:
    """What the kernel would do with seccomp_data (nr, arch, instruction pointer, args) under ``program``."""
    data = struct.pack("<iIQ6Q", nr, arch, ip, *args)
    code = [struct.unpack_from("HBBI", program, at) for at in range(0, len(program), 8)]
    pc, a, x, scratch = 0, 0, 0, [0] * 16
    f = syscall_filter
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        if op == f.LD_ABS_W:
            a = struct.unpack_from("<I", data, k)[0]
        elif op == f.RET:
            return k
        elif op in (f.LD_MEM, f.LDX_MEM, f.ST):
            if op == f.ST:
                scratch[k] = a
            elif op == f.LD_MEM:
                a = scratch[k]
            else:
                x = scratch[k]
        elif op in (f.ADD_K, f.ADD_X):
            a = (a + (k if op == f.ADD_K else x)) & 0xFFFFFFFF
        else:
            taken = {f.JEQ: a == k, f.JGE: a >= k, f.JGT: a > k, f.JGE_X: a >= x, f.JSET: bool(a & k)}[op]
            pc += jt if taken else jf


@pytest.mark.parametrize("arch", sorted(rules.ARCHES))
def test_the_filter_decides_what_the_registers_show(arch):
    table = rules.ARCHES[arch]
    program = syscall_filter.build(table, CHANNELS)
    nr = table.numbers

    def verdict(name, *args, abi=table.audit):
        return run_bpf(program, nr[name], tuple(args) + (0,) * (6 - len(args)), abi)

    assert verdict("mmap", 0, 4096, rules.PROT_READ | rules.PROT_WRITE, 0x22) == ALLOW
    assert verdict("mmap", 0, 4096, rules.PROT_READ | rules.PROT_EXEC, 0x02) == NOTIFY  # code: the supervisor looks
    assert verdict("mmap", 0x1000, 4096, rules.PROT_READ, 0x12) == NOTIFY  # MAP_FIXED may replace a mapping
    for name in ("mprotect", "munmap", "madvise", "mremap", "openat", "ptrace", "process_vm_writev", "close_range"):
        assert verdict(name) == NOTIFY, name
    assert verdict("prctl", rules.PR_SET_DUMPABLE, 0) == ALLOW
    assert verdict("prctl", rules.PR_SET_DUMPABLE, 1) == NOTIFY
    assert verdict("prctl", rules.PR_SET_DUMPABLE, 1 << 32) == NOTIFY  # the kernel reads all 64 bits
    assert verdict("prctl", rules.PR_SET_SECCOMP, 2) == NOTIFY
    assert verdict("prctl", 15, 0) == ALLOW  # PR_SET_NAME
    assert verdict("personality", 0xFFFFFFFF) == ALLOW  # the query
    assert verdict("personality", rules.READ_IMPLIES_EXEC) == NOTIFY
    assert verdict("dup3", 5, 1007) == NOTIFY and verdict("dup3", 1007, 5) == ALLOW
    assert verdict("close", 1009) == NOTIFY and verdict("close", 10) == ALLOW
    assert verdict("shmat", 1, 0, rules.SHM_REMAP) == NOTIFY and verdict("shmat", 1, 0, 0) == ALLOW
    for name in ("io_uring_setup", "openat2", "remap_file_pages"):
        assert verdict(name) == ENOSYS, name
    assert verdict("close", 10, abi=0x40000003) == KILL  # another ABI (i386's int 0x80): other numbers
    if arch == "x86_64":
        assert run_bpf(program, rules.X32_SYSCALL_BIT | 39, arch=table.audit) == KILL  # x32's numbers
        assert verdict("dup2", 4, 1001) == NOTIFY and verdict("dup2", 1001, 4) == ALLOW


def test_only_the_gate_s_closes_run_unnotified():
    """Every opening from the gate is notified, so the supervisor counts it, in any length and any
    access (the one-byte read-only form the timed window once used too); closes of the core's pages
    from the gate run unnotified."""
    table = rules.ARCHES["x86_64"]
    gate, state = 0x7F12_3456_7890, 0x55_0000_1000
    key = state + 8192
    window = 1  # the kernel rounds a one-byte length up to the page
    toggles = syscall_filter.gate_toggles([gate, 0x1000, 0x2000, state, state + 4096, key, key + 4096])
    program = syscall_filter.build(table, CHANNELS, toggles)
    mprotect = table.numbers["mprotect"]

    def verdict(address=state, length=4096, prot=3, ip=gate):
        return run_bpf(program, mprotect, (address, length, prot, 0, 0, 0), table.audit, ip)

    assert verdict(length=window, prot=1) == NOTIFY and verdict(prot=0) == ALLOW
    assert verdict() == NOTIFY and verdict(length=2, prot=1) == NOTIFY and verdict(length=window | 1 << 32) == NOTIFY
    assert verdict(length=window, prot=0) == NOTIFY and verdict(length=window, prot=3) == NOTIFY
    assert verdict(prot=1) == NOTIFY and verdict(prot=7) == NOTIFY and verdict(prot=3 | 1 << 32) == NOTIFY
    assert verdict(length=window, prot=1, ip=gate + 2) == NOTIFY  # s20's own code
    assert verdict(prot=0, ip=gate ^ 1 << 40) == NOTIFY
    assert verdict(address=state + 4096, length=window, prot=1) == NOTIFY and verdict(length=8192) == NOTIFY
    assert verdict(address=key, prot=1) == NOTIFY and verdict(address=key, prot=1, ip=0) == NOTIFY  # opened: counted
    assert verdict(address=key, prot=1, length=window) == NOTIFY
    assert verdict(address=key, prot=0) == ALLOW and verdict(address=key, prot=0, ip=gate + 2) == NOTIFY  # closed


needs_seccomp = pytest.mark.skipif(rules.unavailable() is not None, reason=f"{rules.unavailable()}")


def _filtered_child(run, before=lambda: None) -> tuple[int, socket.socket]:
    """Fork a child that calls ``before()``, installs the filter, hands its listener over the returned
    socket, then runs ``run()`` and exits with its return value."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    syscall_supervisor.prepare(ours.fileno())
    child = os.fork()
    if child == 0:
        try:
            ours.close()
            before()
            syscall_filter.install(theirs.detach(), CHANNELS)
            os._exit(run())
        except BaseException:
            os._exit(99)
    theirs.close()
    return child, ours


@needs_seccomp
def test_without_its_supervisor_every_notified_syscall_fails_closed():
    """The listener closed (the supervisor died): the filter's checked syscalls fail with ENOSYS."""
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.mmap(-1, 4096)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))

    def run():
        refused = libc.mprotect(ctypes.c_void_p(address), 4096, 3) != 0 and ctypes.get_errno() == 38
        opened = libc.open(b"/dev/null", 0)
        return 0 if refused and opened < 0 and ctypes.get_errno() == 38 else 1

    child, link = _filtered_child(run)
    listener, message, pid = syscall_supervisor.receive(link)
    assert listener is not None and pid == child and message["channels"] == CHANNELS
    os.close(listener)
    link.close()
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@needs_seccomp
@pytest.mark.skipif(platform.machine() != "x86_64", reason="int 0x80 is x86_64's other ABI")
def test_a_syscall_of_another_abi_kills_the_worker():
    """i386's getpid through int 0x80, from a file-backed page (code the supervisor lets through)."""
    with tempfile.NamedTemporaryFile(suffix=".bin") as code:
        code.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 20; int 0x80; ret
        code.flush()

        def run():
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            with open(code.name, "rb") as handle:
                page = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, handle.fileno(), 0)
            ctypes.CFUNCTYPE(ctypes.c_int)(page)()
            return 0

        child, link = _filtered_child(run)
        report_r, report_w = os.pipe()
        guard = threading.Thread(target=syscall_supervisor.serve, args=(link.detach(), report_w), daemon=True)
        guard.start()
        _, status = os.waitpid(child, 0)
        guard.join(10)
        os.close(report_r)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS
