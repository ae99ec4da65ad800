"""The filter's shortcut: memory syscalls whose range misses the core and the code loaded before the
import run unnotified; what the rules refuse still reaches the supervisor (BPF and this kernel)."""

import ctypes
import itertools
import mmap
import os
import random
import tempfile

import pytest
from test_syscall_filter import CHANNELS, run_bpf
from test_syscall_supervisor import needs_seccomp, start_the_core, supervised

from harness.contract import syscall_rules as rules
from harness.judge.worker_link.syscall_policy import overlaps, span
from harness.worker import syscall_filter

ALLOW, NOTIFY = rules.RET_ALLOW, rules.RET_USER_NOTIF
GUARDED = [(0x1_FFFF_F000, 0x2_0000_2000),  # across a 4 GiB line: both halves of each bound matter
           (0x5555_0000_0000, 0x5555_0001_0000), (0x7F00_0000_0000, 0x7F00_0020_0000),
           (0x7F00_1000_0000, 0x7F00_1000_1000)]
RW, FIXED = rules.PROT_READ | rules.PROT_WRITE, rules.MAP_FIXED | 0x02  # MAP_PRIVATE


def _near(ranges):
    """Starts and lengths at and around each bound (off by one byte, one page, a 4 GiB carry), and random ones."""
    draw = random.Random(33)
    for start, end in ranges:
        for length in (1, 4095, 4096, 4097, 0x2000, 1 << 31, (1 << 32) - 1):
            for address in (start - length, start - length + 1, start - length - 1, end, end - 1, start, end - 4096):
                yield address & ((1 << 64) - 1), length
    for _ in range(3000):
        address = draw.choice([0x1_0000_0000, 0x5555_0000_0000, 0x7F00_0000_0000]) + draw.randrange(-1 << 33, 1 << 33)
        yield address & ((1 << 64) - 1), draw.choice([draw.randrange(1, 1 << 20), draw.randrange(1, 1 << 32)])


@pytest.mark.parametrize("arch", sorted(rules.ARCHES))
def test_the_shortcut_lets_through_exactly_the_ranges_that_miss_every_guarded_one(arch):
    """munmap, madvise, fixed mmap and mprotect to read or none: ALLOW only where the pages the kernel
    would touch miss every guarded range (the core's rule, and the code rules' frozen code), and
    then always, for lengths under 4 GiB (or the shortcut would save nothing)."""
    table = rules.ARCHES[arch]
    program = syscall_filter.build(table, CHANNELS, shortcut=GUARDED)
    calls = [("munmap", ()), ("madvise", (4,)), ("mmap", (RW, FIXED)), ("mprotect", (rules.PROT_READ,)),
             ("mprotect", (0,))]
    for address, length in _near(GUARDED):
        misses = address < 1 << 63 and not overlaps(span(address, length), GUARDED)
        for name, rest in calls:
            args = (address, length, *rest) + (0,) * (4 - len(rest))
            got = run_bpf(program, table.numbers[name], args, table.audit)
            assert got == (ALLOW if misses else NOTIFY), (name, hex(address), hex(length))


@pytest.mark.parametrize("arch", sorted(rules.ARCHES))
def test_what_the_shortcut_cannot_judge_still_reaches_the_supervisor(arch):
    """Far from every guarded range: write or execute access, an executable mapping, a length of 4 GiB,
    mremap and pkey_mprotect are still the supervisor's (W^X needs the worker's live maps)."""
    table = rules.ARCHES[arch]
    program = syscall_filter.build(table, CHANNELS, shortcut=GUARDED)
    nr, far = table.numbers, 0x3000_0000_0000

    def verdict(name, *args):
        return run_bpf(program, nr[name], tuple(args) + (0,) * (6 - len(args)), table.audit)

    assert verdict("munmap", far, 4096) == ALLOW
    for prot in (RW, rules.PROT_WRITE, rules.PROT_EXEC, rules.PROT_READ | rules.PROT_EXEC, 1 << 32, 1 << 24 | 1):
        assert verdict("mprotect", far, 4096, prot) == NOTIFY, prot
    assert verdict("mmap", far, 4096, rules.PROT_READ | rules.PROT_EXEC, FIXED) == NOTIFY
    assert verdict("mmap", far, 1 << 32, RW, FIXED) == NOTIFY and verdict("munmap", far, 1 << 32) == NOTIFY
    assert verdict("munmap", 1 << 63, 4096) == NOTIFY  # no user address: the end's high half could wrap
    for name in ("mremap", "pkey_mprotect"):
        assert verdict(name, far, 4096, rules.PROT_READ) == NOTIFY, name
    # The core's own pages: a fixed mapping over them reaches the core rule.
    assert verdict("mmap", 0x7F00_1000_0000, 4096, RW, FIXED) == NOTIFY
    assert verdict("madvise", 0x7F00_0010_0000, 4096, 4) == NOTIFY


def test_cover_holds_every_range_in_at_most_the_limit():
    draw = random.Random(7)
    ranges = [(start, start + draw.randrange(1, 64) * 4096) for start in
              (draw.randrange(1 << 20, 1 << 35) * 4096 for _ in range(400))]
    merged = rules.cover(ranges)
    assert len(merged) <= rules.SHORTCUT_RANGES and merged == sorted(merged)
    assert rules.uncovered(ranges, merged) == []
    assert all(a[1] < b[0] for a, b in itertools.pairwise(merged))  # disjoint, with gaps
    assert rules.uncovered([(1 << 50, (1 << 50) + 4096)], merged) == [(1 << 50, (1 << 50) + 4096)]
    for table in rules.ARCHES.values():  # the most ranges, with every toggle: within the kernel's 4096 instructions
        gate = [1 << 46, 1 << 40, (1 << 40) + 8 * 4096, 1 << 45, (1 << 45) + 4096, 1 << 44, (1 << 44) + 4096]
        program = syscall_filter.build(table, CHANNELS, syscall_filter.gate_toggles(gate), 7, merged)
        assert len(merged) == rules.SHORTCUT_RANGES and len(program) // 8 <= 4096


def _churn(count: int = 100) -> int:
    """What an honest process does with its memory: map, change and return pages, none of them code."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    for _ in range(count):
        page = libc.mmap(None, 2 * 4096, RW, 0x22, -1, 0)  # anonymous, private: the kernel picks the place
        if libc.mmap(ctypes.c_void_p(page), 4096, RW, 0x32, -1, 0) != page:  # fixed over its own page
            return 1
        if libc.madvise(ctypes.c_void_p(page), 4096, 4) or libc.mprotect(ctypes.c_void_p(page), 4096, 1):
            return 1
        if libc.munmap(ctypes.c_void_p(page), 2 * 4096):
            return 1
    return 0


@needs_seccomp
def test_an_honest_churn_of_memory_no_longer_reaches_the_supervisor():
    """The same workload with and without the shortcut: the count falls from one per syscall to none."""
    def without():
        syscall_filter.shortcut_ranges = lambda gate: None

    everything = supervised(_churn, without)
    decided = supervised(_churn)
    assert everything["exit"] == 0 and decided["exit"] == 0
    assert everything["notifications"] >= 400 and everything["by_syscall"].get("munmap", 0) >= 100
    assert decided["notifications"] < 20 and not {"munmap", "madvise", "mprotect R"} & set(decided["by_syscall"])
    assert decided["refused"] == {} == everything["refused"]


@needs_seccomp
@pytest.mark.parametrize("attempt", ["mmap fixed", "madvise", "mprotect none", "munmap"])
def test_the_core_pages_still_reach_the_core_rule(attempt):
    """A fixed mmap, madvise, mprotect or munmap of the core's key page: notified, refused ('core')."""
    from harness.worker import _sealed

    def run():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        out = (ctypes.c_ulonglong * 64)()
        ctypes.CDLL(_sealed.__file__).nvfp4_gate_describe(out, 64)
        key = ctypes.c_void_p(out[5])
        done = {"mmap fixed": lambda: libc.mmap(key, 4096, RW, 0x32, -1, 0) == out[5],
                "madvise": lambda: libc.madvise(key, 4096, 4) == 0,
                "mprotect none": lambda: libc.mprotect(key, 4096, 0) == 0,
                "munmap": lambda: libc.munmap(key, 4096) == 0}[attempt]()
        return 1 if done else 0

    state = supervised(run, start_the_core)
    assert state["exit"] == 0 and state["refused"] == {"core": 1}


@needs_seccomp
def test_code_unmapped_unnotified_does_not_refuse_a_later_writable_page_there():
    """The supervisor's list of executable mappings can be stale after an unmap the filter let
    through: a refusal under the code rule is decided again from the live maps."""
    with tempfile.NamedTemporaryFile() as code:
        code.write(b"\xc3" * 4096)
        code.flush()

        def run():
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            with open(code.name, "rb") as handle:  # new code, after the filter: notified, allowed
                text = libc.mmap(None, 4096, rules.PROT_READ | rules.PROT_EXEC, 0x02, handle.fileno(), 0)
            scratch = mmap.mmap(-1, 4096)
            address = ctypes.addressof(ctypes.c_char.from_buffer(scratch))
            if libc.mprotect(ctypes.c_void_p(address), 4096, RW):  # the supervisor reads the maps now
                return 1
            if libc.munmap(ctypes.c_void_p(text), 4096):  # the code is gone, unnotified
                return 2
            if libc.mmap(ctypes.c_void_p(text), 4096, rules.PROT_READ, 0x32, -1, 0) != text:
                return 3
            return 0 if libc.mprotect(ctypes.c_void_p(text), 4096, RW) == 0 else 4

        state = supervised(run)
    assert state["exit"] == 0 and state["refused"] == {}


@needs_seccomp
def test_the_supervisor_does_not_arm_if_the_shortcut_leaves_frozen_code_out():
    """The worker's guarded ranges must hold the code the supervisor freezes, else the run fails closed."""
    from harness.judge.worker_link.syscall_supervisor import Guarded

    with open("/proc/self/maps") as handle:
        code = rules.executable_ranges(handle.read())
    assert Guarded(os.getpid(), {"channels": [], "gate": None, "shortcut": rules.cover(code)}).worker.frozen
    with pytest.raises(RuntimeError, match="unguarded"):
        Guarded(os.getpid(), {"channels": [], "gate": None, "shortcut": rules.cover(code[1:])})
