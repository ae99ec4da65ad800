"""Diagnostics of a hung CUDA worker's missing stack (issue 34), one JSON line per check; run by
scripts/hang_probe.sh on the GPU, which also runs the contestant's command line itself.

  python scripts/hang_probe.py signals [--device cuda]
      In one plain process (no harness, no sandbox): faulthandler armed on SIGUSR1, then each step a
      worker takes (import torch, CUDA's start, a Triton kernel, the compiled core's init). After each:
      is faulthandler's handler still installed (else: which library's handler replaced it), does a
      SIGUSR1 to the process write a dump, and does one sent to each of its threads (a CUDA driver
      thread among them) write one? Answers "CUDA replaces the handler" / "blocks the signal" / "the
      handler runs in a driver thread and writes nothing".
  python scripts/hang_probe.py route ROUTE FILE [--device cuda] [--scale 0.1]
      One hang through evaluate_submission (nvfp4_gemv, test mode) with one route to the stacks:
        both      as shipped: the watchdog armed per request, SIGUSR1 when it wrote nothing
        watchdog  the watchdog only (the parent's SIGUSR1 is dropped)
        signal    SIGUSR1 only, through the reaper (requests carry no limit: no watchdog)
        direct    SIGUSR1 only, sent straight to the worker's pid (the reaper bypassed)
      Prints exit code, seconds, whether the reason names FILE's line, and the worker's threads as
      /proc showed them just before and just after the parent asked for the stacks.
The sandbox steps come from $NVFP4_SANDBOX as in any run (hang_probe.sh runs each with and without uid).
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


class _Sigaction(ctypes.Structure):  # glibc's struct sigaction on x86_64 and aarch64
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16), ("flags", ctypes.c_int),
                ("restorer", ctypes.c_void_p)]


class _DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p), ("sname", ctypes.c_char_p),
                ("saddr", ctypes.c_void_p)]


LIBC = ctypes.CDLL(None, use_errno=True)
SYS_TGKILL = 234 if os.uname().machine == "x86_64" else 131


def usr1_handler() -> tuple[int, str]:
    """(address of SIGUSR1's handler, the library it lies in: 'SIG_DFL', 'SIG_IGN' or a path)."""
    action = _Sigaction()
    LIBC.sigaction(signal.SIGUSR1, None, ctypes.byref(action))
    address = action.handler or 0
    if address in (0, 1):
        return address, ("SIG_DFL", "SIG_IGN")[address]
    info = _DlInfo()
    found = LIBC.dladdr(ctypes.c_void_p(address), ctypes.byref(info))
    return address, (info.fname or b"?").decode() + (f" ({info.sname.decode()})" if found and info.sname else "")


def threads() -> list[tuple[int, str, bool]]:
    """(tid, name, SIGUSR1 blocked) of every thread of this process."""
    found = []
    for task in sorted(Path("/proc/self/task").iterdir(), key=lambda t: int(t.name)):
        status = dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines() if ":\t" in line)
        blocked = bool(int(status.get("SigBlk", "0"), 16) & (1 << (signal.SIGUSR1 - 1)))
        found.append((int(task.name), status.get("Name", "?").strip(), blocked))
    return found


def _dumped(fd: int, send: Callable[[], None]) -> bool:
    before = os.fstat(fd).st_size
    send()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and os.fstat(fd).st_size == before:
        time.sleep(0.02)
    return os.fstat(fd).st_size > before


def signals(device: str) -> None:
    """The in-process check (see the module's docstring)."""
    dump = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
    fd = dump.fileno()
    faulthandler.register(signal.SIGUSR1, file=fd, all_threads=True)
    armed, _ = usr1_handler()
    state: dict[str, object] = {}

    def import_torch() -> None:
        import torch

        state["torch"] = torch

    def cuda_start() -> None:
        state["torch"].zeros(1, device=device)

    def triton_kernel() -> None:
        import triton
        import triton.language as tl

        @triton.jit
        def add_one(x_ptr):
            tl.store(x_ptr, tl.load(x_ptr) + 1)

        x = state["torch"].zeros(1, device=device)
        add_one[(1,)](x)
        state["torch"].cuda.synchronize()

    def sealed_core() -> None:
        from harness.judge.worker_link import worker_spawn
        from harness.worker import sealed_core as core

        if not core.sealed_available():
            raise RuntimeError("harness/worker/_sealed*.so not built")
        _, key_fd = worker_spawn.new_key_pipe()
        state["timer"] = core.SealedTimer(key_fd, state["torch"].device(device))

    for name, step in (("armed", lambda: None), ("import torch", import_torch), ("CUDA started", cuda_start),
                       ("Triton kernel", triton_kernel), ("compiled core init", sealed_core)):
        line: dict[str, object] = {"check": "signals", "step": name}
        try:
            step()
        except Exception as error:  # a step this machine cannot take: said, and the rest go on
            line["step_failed"] = f"{type(error).__name__}: {error}"
        address, owner = usr1_handler()
        line["handler_kept"] = address == armed
        line["handler"] = owner
        listed = threads()
        line["threads"] = [f"{tid} {name_}{' (SIGUSR1 blocked)' if blocked else ''}" for tid, name_, blocked in listed]
        if address == armed:  # only then: SIG_DFL would end this probe
            line["dump_on_process_signal"] = _dumped(fd, lambda: os.kill(os.getpid(), signal.SIGUSR1))
            line["dump_on_thread_signal"] = {
                f"{tid} {name_}": _dumped(fd, lambda tid=tid: LIBC.syscall(SYS_TGKILL, os.getpid(), tid,
                                                                           signal.SIGUSR1))
                for tid, name_, blocked in listed if not blocked}
        print(json.dumps(line), flush=True)


def route(name: str, file: Path, device: str, scale: float) -> None:
    """One hang with one route to the stacks (see the module's docstring)."""
    from harness.contract.results import Status
    from harness.judge.run import evaluate_submission
    from harness.judge.worker_link import worker_process
    from harness.judge.worker_link.worker_channel import WorkerSession

    real_kill, real_request, real_stacks = os.kill, WorkerSession._request, worker_process.WorkerProcess.stacks
    seen: dict[str, str] = {}

    def kill(pid: int, number: int) -> None:
        if number != signal.SIGUSR1:
            return real_kill(pid, number)
        if name == "watchdog":
            return None
        targets = [pid] if name != "direct" else [
            p for p in worker_process.descendants(pid)
            if b"harness.worker.boot" in Path(f"/proc/{p}/cmdline").read_bytes()
            and b"worker_reaper" not in Path(f"/proc/{p}/cmdline").read_bytes()]
        for target in targets:
            real_kill(target, number)
        return None

    def stacks(self: worker_process.WorkerProcess, wait_s: float = worker_process.STACK_WAIT_S) -> str:
        seen["before"] = worker_process.thread_states(self.process.pid)
        text = real_stacks(self, wait_s)
        seen["after"] = worker_process.thread_states(self.process.pid) if self.alive() else "exited"
        return text

    worker_process.os.kill = kill  # the module's os is the os module: restored below
    worker_process.WorkerProcess.stacks = stacks
    if name in ("signal", "direct"):
        WorkerSession._request = lambda self, header, limit_s: real_request(self, header, None)
    started = time.monotonic()
    try:
        result = evaluate_submission("nvfp4_gemv", file, "test", device, timeout_scale=scale)
    finally:
        os.kill, WorkerSession._request, worker_process.WorkerProcess.stacks = real_kill, real_request, real_stacks
    hung = next((c for c in result.cases if c.status == Status.TIMEOUT), None)
    print(json.dumps({
        "check": "route", "route": name, "file": file.name, "sandbox": os.environ.get("NVFP4_SANDBOX", "default"),
        "exit": int(result.exit_code), "seconds": round(time.monotonic() - started, 1),
        "names_the_line": f"it was at {file.name}:" in result.reason, "reason": result.reason,
        "stacks_head": (hung.traceback or "")[:600] if hung else "", **seen,
    }), flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    check = sub.add_parser("signals")
    check.add_argument("--device", default="cuda")
    one = sub.add_parser("route")
    one.add_argument("route", choices=("both", "watchdog", "signal", "direct"))
    one.add_argument("file", type=Path)
    one.add_argument("--device", default="cuda")
    one.add_argument("--scale", type=float, default=0.1)
    args = parser.parse_args(argv)
    if args.what == "signals":
        signals(args.device)
    else:
        route(args.route, args.file.resolve(), args.device, args.scale)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
