"""The syscall supervisor's decisions, rule by rule, on a made-up worker (no seccomp involved)."""

import errno

from harness.contract import syscall_rules as rules
from harness.judge.worker_link.syscall_policy import Worker, decide, span

R, W, X = rules.PROT_READ, rules.PROT_WRITE, rules.PROT_EXEC
GATE_IP, IMAGE, KEY = 0x7000_0100, (0x7000_0000, 0x7000_8000), (0x5000_0000, 0x5000_1000)
STATE = (0x6000_0000, 0x6000_1000)
LIBC_TEXT, LATER_CODE = (0x7F00_0000, 0x7F10_0000), (0x7E00_0000, 0x7E01_0000)
WORKER, THREAD, CHILD = 100, 101, 200


def worker(**changes) -> Worker:
    made = Worker(pid=WORKER, gate_ip=GATE_IP, core=[IMAGE, KEY], gate_pages={KEY: R}, frozen=[LIBC_TEXT],
                  channels=frozenset({3, 4}), same_mm=lambda tid: tid != CHILD, same_files=lambda tid: tid != CHILD,
                  executable=lambda: [LIBC_TEXT, LATER_CODE])
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def rule(name, *args, ip=0, tid=THREAD, guarded=None):
    verdict = decide(name, list(args) + [0] * (6 - len(args)), ip, tid, guarded or worker())
    return verdict.rule


def test_forbidden_syscalls_are_refused_whatever_their_arguments():
    assert rule("ptrace", 16, WORKER) == "ptrace"
    assert rule("process_vm_writev", WORKER) == rule("process_vm_readv", WORKER) == "process_vm"
    assert rule("prctl", rules.PR_SET_DUMPABLE, 1) == "dumpable"
    assert rule("prctl", rules.PR_SET_SECCOMP, 2) == rule("seccomp", 1) == "seccomp"
    assert rule("seccomp", 3) is None  # SECCOMP_GET_NOTIF_SIZES: a query
    assert rule("personality", rules.READ_IMPLIES_EXEC) == "read_implies_exec"
    assert rule("userfaultfd", 0) == "userfaultfd"
    assert rule("mount", 0) == rule("chroot", 0) == rule("fsopen", 0) == "mounts"


def test_the_core_s_pages_change_only_through_its_gate_and_only_to_open_or_close_the_key():
    guarded = worker(gate_pages={KEY: R, STATE: R | W}, core=[IMAGE, KEY, STATE])
    opened = decide("mprotect", [KEY[0], 4096, R, 0, 0, 0], GATE_IP, THREAD, guarded)
    assert opened.rule is None and opened.error == 0 and opened.unlock
    assert rule("mprotect", KEY[0], 4096, 0, ip=GATE_IP, guarded=guarded) is None
    assert rule("mprotect", KEY[0], 4096, R) == "core"  # from anywhere else: p01c
    assert rule("mprotect", KEY[0], 4096, R | W, ip=GATE_IP, guarded=guarded) == "core"  # the key stays read-only
    state = decide("mprotect", [STATE[0], 4096, R | W, 0, 0, 0], GATE_IP, THREAD, guarded)
    assert state.rule is None and not state.unlock and state.state_open  # counted: the parent compares
    read = decide("mprotect", [STATE[0], 1, R, 0, 0, 0], GATE_IP, THREAD, guarded)
    assert read.rule == "core"  # one byte read-only, the window's old uncounted form: a reader of the page (x17)
    written = decide("mprotect", [STATE[0], 1, R | W, 0, 0, 0], GATE_IP, THREAD, guarded)
    assert written.rule is None and written.state_open  # read-write in one byte's length: counted like any (x16)
    assert not decide("mprotect", [STATE[0], 4096, 0, 0, 0, 0], GATE_IP, THREAD, guarded).state_open  # a close
    assert not opened.state_open
    assert rule("mprotect", STATE[0], 4096, R, ip=GATE_IP, guarded=guarded) == "core"  # read alone: a key reader
    assert rule("mprotect", STATE[0], 4096, R | W, guarded=guarded) == "core"  # s20, from its own code
    assert rule("mprotect", IMAGE[0], 4096, R, ip=GATE_IP) == "core"  # the gate opens only its own pages
    assert rule("pkey_mprotect", KEY[0], 4096, R, 0, ip=GATE_IP) == "core"
    assert rule("madvise", KEY[0], 4096, 19) == "core"  # MADV_KEEPONFORK: x12
    assert rule("munmap", IMAGE[0] + 0x2000, 4096) == "core"
    assert rule("mmap", KEY[0], 4096, R | W, 0x32) == "core"  # MAP_FIXED over it
    assert rule("mremap", KEY[0], 4096, 8192, 1) == "core"
    assert rule("mremap", 0x1000, 4096, 4096, rules.MREMAP_FIXED | 1, KEY[0]) == "core"  # moved onto it
    assert rule("mprotect", KEY[0] - 4096, 4097, R) == "core"  # a range that only touches it, rounded to pages


def test_w_xor_x():
    assert rule("mmap", 0, 4096, R | W | X, 0x22) == "wx"
    assert rule("mmap", 0, 4096, R | X, 0x22) == "wx"  # anonymous code
    assert rule("mmap", 0, 4096, R | X, 0x02, 5) is None  # code from a file, as a loader or JIT maps it
    assert rule("mprotect", 0x1000_0000, 4096, R | W | X) == "wx"
    assert rule("mprotect", 0x1000_0000, 4096, R | X) is None  # new code, written first
    assert rule("mprotect", LIBC_TEXT[0], 4096, R | W) == "code"  # x01: code made writable
    assert rule("mprotect", LATER_CODE[0], 4096, R | W) == "code"  # code loaded after the import too
    assert rule("mprotect", LIBC_TEXT[0], 4096, R) is None  # less access is fine
    assert rule("mmap", LIBC_TEXT[0], 4096, R | X, 0x12, 5) == "code"  # replaced by other code
    assert rule("mremap", LIBC_TEXT[0], 4096, 4096, 0) == "code"
    assert rule("munmap", LIBC_TEXT[0], 4096) == "unmap_code"  # dlclose: refused, not a violation
    assert rule("munmap", LATER_CODE[0], 4096) is None
    assert rule("shmat", 1, 0, rules.SHM_REMAP) == "code"
    assert "wx" not in rules.REJECTING and "unmap_code" not in rules.REJECTING and "code" in rules.REJECTING


def test_a_child_s_own_memory_and_fds_are_its_own_business():
    assert rule("mprotect", KEY[0], 4096, R, tid=CHILD) is None  # its copy (zeros: the key is wiped on fork)
    assert rule("mmap", 0, 4096, R | W | X, 0x22, tid=CHILD) is None
    assert rule("close_range", 3, 0xFFFFFFFF, 0, tid=CHILD) is None  # subprocess's child before exec
    assert rule("dup2", 5, 3, tid=CHILD) is None


def test_the_channel_fds_stay_the_worker_s():
    assert rule("dup2", 5, 3) == rule("dup3", 5, 4, 0) == "channels"
    assert rule("dup2", 3, 3) is None  # a no-op
    assert rule("close", 4) == "channels" and rule("close", 5) is None
    assert rule("close_range", 2, 10, 0) == "channels"
    assert rule("close_range", 5, 10, 0) is None
    assert rule("close_range", 0, 10, rules.CLOSE_RANGE_CLOEXEC) is None  # marks, does not close


def test_opens_are_judged_by_where_the_lookup_leads():
    paths = {0x10: "/proc/self/mem", 0x20: "/tmp/notes.txt", 0x30: "mem"}
    leads = {"/proc/self/mem": ["/proc", "/proc/100", "/proc/100/mem"], "/tmp/notes.txt": ["/tmp", "/tmp/notes.txt"],
             "mem": ["/proc/100/task/101/mem"]}
    guarded = worker(read_path=lambda tid, address: paths.get(address),
                     lookup=lambda tid, dirfd, path: leads[path])
    assert rule("open", 0x10, 0, guarded=guarded) == "proc_mem"
    assert rule("openat", rules.AT_FDCWD & 0xFFFFFFFF, 0x20, 0, guarded=guarded) is None
    assert rule("openat", 9, 0x30, 0, guarded=guarded) == "proc_mem"  # relative to a /proc dirfd
    unreadable = decide("open", [0x40, 0, 0, 0, 0, 0], 0, THREAD, guarded)
    assert unreadable.error == errno.EFAULT and unreadable.rule is None  # refused, not a violation


def test_span_rounds_to_whole_pages():
    assert span(0x1001, 1) == (0x1000, 0x2000)
    assert span(0x1000, 0x1001) == (0x1000, 0x3000)
    assert span(0x1000, 0) == (0x1000, 0x1000)


def test_the_core_maps_the_parents_output_file_again_for_a_larger_output():
    """A shared read-write mapping of a file (MAP_SHARED, at an address the kernel picks), and the
    release of the smaller one, are not the core's pages nor code: the filter lets them run (issue 33)."""
    MAP_SHARED, OUTPUT_MAP = 0x01, (0x3000_0000, 0x3400_0000)
    assert rule("mmap", 0, 128 << 20, R | W, MAP_SHARED, 14, 0) is None
    assert rule("munmap", OUTPUT_MAP[0], OUTPUT_MAP[1] - OUTPUT_MAP[0]) is None
    assert rule("dup2", 9, 14, guarded=worker(channels=frozenset({3, 4, 14}))) == "channels"  # row f02


def test_a_signal_runs_only_to_a_process_of_the_run():
    """Another entry's worker (same uid), the reaper and the evaluator are out of reach; what the worker
    started, and its own threads, are not (the filter passes signals to the worker itself unasked)."""
    guarded = worker(ours=lambda pid: pid in (WORKER, THREAD, CHILD), pidfd_target=lambda tid, fd: {7: CHILD}.get(fd))
    other_entry, reaper = 300, 99
    for name in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"):
        assert rule(name, CHILD, 19, guarded=guarded) is None
        assert rule(name, other_entry, 19, guarded=guarded) == rule(name, reaper, 19, guarded=guarded) == "signals"
    assert rule("kill", (-1) & 0xFFFFFFFF, 9, guarded=guarded) == "signals"  # every process the uid may signal
    assert rule("kill", (-CHILD) & 0xFFFFFFFF, 9, guarded=guarded) is None  # the group a child leads
    assert rule("kill", (-other_entry) & 0xFFFFFFFF, 9, guarded=guarded) == "signals"
    assert rule("pidfd_send_signal", 7, 9, guarded=guarded) is None
    assert rule("pidfd_send_signal", 8, 9, guarded=guarded) == "signals"  # not a pidfd of the run's
    refused = decide("kill", [other_entry, 19, 0, 0, 0, 0], 0, THREAD, guarded)
    assert refused.error == errno.EPERM and refused.detail == f"kill({other_entry})"
    assert "signals" not in rules.REJECTING  # refused and counted: a signal is no proof of a cheat
