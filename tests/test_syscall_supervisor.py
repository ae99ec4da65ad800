"""The syscall supervisor against a real filtered process: what it lets through, refuses and reports."""

import ctypes
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from test_syscall_filter import CHANNELS, _filtered_child

from harness.contract import syscall_rules as rules

needs_seccomp = pytest.mark.skipif(rules.unavailable() is not None or os.geteuid() != 0,
                                   reason=f"needs seccomp user notification and root: {rules.unavailable()}")


def supervised(run, before=lambda: None) -> dict:
    """Run ``run()`` in a child under the filter (``before()`` first, unfiltered), this process
    supervising; the supervisor's last record."""
    from harness.judge.worker_link import syscall_supervisor

    child, link = _filtered_child(run, before)
    report_r, report_w = os.pipe()
    guard = threading.Thread(target=syscall_supervisor.serve, args=(link.detach(), report_w), daemon=True)
    guard.start()
    _, status = os.waitpid(child, 0)
    guard.join(10)
    with os.fdopen(report_r, "rb") as report:
        state = json.loads(report.read().splitlines()[-1])
    state["exit"] = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return state


def start_the_core() -> None:
    """Before the filter, as in the worker: the core started, its key's page closed through the gate."""
    from harness.worker import sealed_core

    key_r, key_w = os.pipe()
    os.write(key_w, os.urandom(64))  # the MAC key and the staging key (worker_spawn.new_key_pipe)
    os.close(key_w)
    try:
        sealed_core.SealedTimer(key_r, torch.device("cpu"))
    except RuntimeError as error:  # an earlier test of this process started it: the fork has it
        if "already initialized" not in str(error):
            raise


@needs_seccomp
def test_the_core_opens_its_key_through_the_gate_and_nobody_else_does():
    from harness.worker import _sealed

    libc = ctypes.CDLL(None, use_errno=True)

    def run():
        _, _, _, key_page = described()
        opened_elsewhere = libc.mprotect(ctypes.c_void_p(key_page), 4096, 1) == 0
        mac = _sealed.recheck(os.urandom(16))[3]  # the core's own MAC: one opening, through the gate
        return 0 if not opened_elsewhere and len(mac) == 32 else 1

    def described():
        out = (ctypes.c_ulonglong * 64)()
        ctypes.CDLL(_sealed.__file__).nvfp4_gate_describe(out, 64)
        return out[0], out[1], out[2], out[5]  # out[3]: the call-state page; out[5]: the key's

    state = supervised(run, start_the_core)
    assert state["exit"] == 0
    assert state["unlocks"] == 1 and state["refused"] == {"core": 1} and state["gate_pages"] == 2  # key, call state
    assert state["sync_wake"] == (rules.kernel_release() >= (6, 6))  # answers handed over on one CPU where Linux can


def state_page_openings() -> dict:
    """The supervisor's record of a child that binds the core, times two calls, rechecks once, opens the
    call-state page through the gate read-write (counted) and in one byte's length read-write (counted
    too), closing it after each, and asks for it read-only (refused)."""
    import platform
    import types

    from harness.worker import _sealed

    def run():
        out = (ctypes.c_ulonglong * 64)()
        ctypes.CDLL(_sealed.__file__).nvfp4_gate_describe(out, 64)
        gate = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)(
            out[0] - {"x86_64": 7, "aarch64": 8}[platform.machine()])
        _sealed.bind(lambda _: types.SimpleNamespace(custom_kernel=lambda data: data * 2), "in-test")
        answers = [_sealed.time_call(torch.ones(4, 4), index, 0, 0.0)[0] for index in (1, 2)]
        _sealed.recheck(os.urandom(16))
        planted = [gate(out[3], 4096, 3), gate(out[3], 4096, 0)]  # counted
        written = [gate(out[3], 1, 3), gate(out[3], 4096, 0)]  # one byte's length, read-write: counted
        read = gate(out[3], 1, 1)  # read-only: refused (rule 'core'), nothing opened
        return 0 if answers == ["ok", "ok"] and planted == written == [0, 0] and read != 0 else 1

    return supervised(run, start_the_core)




@needs_seccomp
def test_each_opening_of_the_call_state_page_is_counted():
    """Three openings at bind, two per timed call (its entry, when custom_kernel returns), one per
    recheck: told to the supervisor. One more through the gate (x11's way, for the call-state page) is
    counted, and so is one naming a single byte, and the parent finds them (WorkerSession._count_state).
    In a fresh interpreter: the core binds once per process, and an earlier test of this one may have
    bound it (tests/test_seal.py), which a fork would inherit."""
    tests = Path(__file__).resolve().parent
    done = subprocess.run([sys.executable, "-c", "import json, test_syscall_supervisor as t; "
                           "print(json.dumps(t.state_page_openings()))"], cwd=tests, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": f"{tests.parent}:{tests}"})
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout.splitlines()[-1])
    assert state["exit"] == 0 and state["state_page"]
    assert state["state_opens"] == 3 + 2 * 2 + 1 + 2 and state["unlocks"] == 3  # two calls' MACs, the recheck's
    assert state["refused"] == {"core": 1}  # the read-only opening


@needs_seccomp
def test_code_loaded_before_the_filter_stays_and_a_child_keeps_its_own_fds():
    libc = ctypes.CDLL(None, use_errno=True)
    text = ctypes.cast(libc.getpid, ctypes.c_void_p).value & ~4095

    def run():
        unmapped = libc.munmap(ctypes.c_void_p(text), 4096) == 0  # a dlclose of libc would be refused, quietly
        child = os.fork()
        if child == 0:  # its own fd table: the worker's channel numbers are free to reuse there
            os._exit(0 if os.dup2(0, CHANNELS[0]) == CHANNELS[0] else 1)
        _, status = os.waitpid(child, 0)
        return 0 if not unmapped and status == 0 else 1

    state = supervised(run)
    assert state["exit"] == 0 and state["refused"] == {"unmap_code": 1}
    assert state["state"] == "ended" and state["notifications"] >= 2 and state["handled_ms"] > 0


def test_a_path_rewritten_after_it_was_let_through_rejects_the_run():
    """The race for the kernel's own reading of a path: seen when the new path stays."""
    from harness.judge.worker_link import syscall_supervisor
    from harness.judge.worker_link.syscall_policy import Worker

    class Rewritten:
        worker = Worker(pid=1, read_path=lambda tid, address: "/proc/self/mem",
                        lookup=lambda tid, dirfd, path: ["/proc/1/mem"])

    read, write = os.pipe()
    reporter = syscall_supervisor.Reporter(write)
    syscall_supervisor._recheck("open", [0x10, 0, 0, 0, 0, 0], 1, Rewritten(), reporter)
    os.close(write)
    with os.fdopen(read) as report:
        state = json.loads(report.read().splitlines()[-1])
    assert state["refused"] == {"proc_mem": 1} and "changed while it was checked" in state["details"]["proc_mem"]
