"""One worker process, from the parent: take or spawn it confined, read its messages, end it and all it started.

How it is started (scrubbed environment, own session, memory cap, the reaper between the two) is
``harness.judge.worker_link.worker_spawn``; a worker started before its file was known comes off
``harness.judge.worker_link.blank_workers``' shelf. What is said over its pipes is
``harness.judge.worker_link.worker_channel``'s business.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.contract import messages, protocol
from harness.contract.output_file import FILE_KEY
from harness.judge.worker_link import blank_workers, output_reader, worker_spawn
from harness.judge.worker_link.supervision import Supervision
from harness.judge.worker_link.worker_spawn import SpawnedWorker, WorkerSpec

STACK_WAIT_S = 2.0
"""How long a worker past its time limit may take to write its stacks before it is killed."""


def describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        name = signal.Signals(-code).name
        hint = {
            "SIGSEGV": " (segmentation fault)",
            "SIGKILL": " (killed: out of host memory, or by the harness)",
            "SIGABRT": " (aborted)",
            "SIGBUS": " (bus error)",
            "SIGSYS": " (a syscall of another ABI, which the syscall filter kills)",
        }.get(name, "")
        return f"was killed by {name}{hint}"
    return f"exited with code {code} (os._exit or a fatal error in the submission)"


def _wait_for_growth(fd: int, start: int, wait_s: float) -> None:
    """Until the file behind ``fd`` has grown past ``start`` and stopped growing, or ``wait_s``."""
    deadline, size = time.monotonic() + wait_s, start
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = os.fstat(fd).st_size
        if now > start and now == size:  # written and no longer growing
            return
        size = now


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the reaper's worker, the namespace's init, what they started)."""
    found, queue_ = [], [pid]
    while queue_:
        parent = queue_.pop()
        with contextlib.suppress(OSError, ValueError):
            for task in Path(f"/proc/{parent}/task").iterdir():
                children = [int(c) for c in (task / "children").read_text().split()]
                found += children
                queue_ += children
    return found


SIGNAL_FIELDS = ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")


def thread_states(pid: int) -> str:
    """How each thread of the worker below ``pid`` stands, read from outside (/proc): its name, state,
    kernel wait channel, and whether SIGUSR1 is pending, blocked, ignored or caught there."""
    usr1 = 1 << (signal.SIGUSR1 - 1)
    lines = []
    for process in [pid, *descendants(pid)]:
        try:
            command = Path(f"/proc/{process}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            tasks = sorted(Path(f"/proc/{process}/task").iterdir(), key=lambda t: int(t.name))
        except OSError:
            continue
        if worker_spawn.WORKER_MODULE not in command or "worker_reaper" in command:
            continue
        for task in tasks:
            with contextlib.suppress(OSError, ValueError):
                status = dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines()
                              if ":\t" in line)
                usr1_in = [name for name in SIGNAL_FIELDS if int(status.get(name, "0"), 16) & usr1]
                wchan = (task / "wchan").read_text().strip() or "-"
                lines.append(f"thread {task.name} {status.get('Name', '?').strip()}: {status.get('State', '?')}, "
                             f"waits in {wchan}; SIGUSR1 {'/'.join(usr1_in) or 'neither pending, blocked nor caught'}")
    return "the worker's threads: " + ("; ".join(lines) if lines else "not found under /proc")


class WorkerProcess:
    """One worker for one submission: its process group, pipes, key, work folder and log."""

    def __init__(self, submission: Path, device: str, visible_devices: str | None,
                 command_prefix: list[str], keep_uid: bool = False) -> None:
        self.submission = submission
        self.device = device
        self.command_prefix = command_prefix  # a wrapper of the worker, e.g. compute-sanitizer
        # keep_uid: no uid drop (Nsight Compute reads counters the driver keeps for admins)
        self.spec = WorkerSpec(device, visible_devices, tuple(command_prefix), keep_uid)
        self.messages: queue.Queue[protocol.Received | BaseException] = queue.Queue()
        # Where the core may put outputs instead of the pipe, and the parent's reader of each: the output
        # file from the spawn, the device snapshot once WorkerSession.start has made one.
        self.places: dict[str, protocol.Fetch] = {}
        self.settlers: list[Callable[[], None]] = []  # run after each message is read (device_snapshot.settle)
        self.spawned: SpawnedWorker | None = None
        self.supervision = Supervision(False)  # the syscall supervisor's record, once spawned with one
        self.head_start_s = 0.0  # how long the worker had been starting before this file took it

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self.spawned.process if self.spawned else None

    @property
    def key(self) -> bytes:
        assert self.spawned is not None
        return self.spawned.key

    @property
    def drop_to_uid(self) -> int | None:
        """The uid the worker runs as, when it dropped the evaluator's (None: it kept it)."""
        return self.spawned.drop_to_uid if self.spawned else None

    def spawn(self) -> None:
        """Take a blank worker that fits, else start one; its messages are read on a thread into ``messages``."""
        self.spawned = blank_workers.SHELF.worker_for(self.spec, self.submission)
        self.head_start_s = time.perf_counter() - self.spawned.started_at if self.spawned.blank else 0.0
        self.supervision = self.spawned.supervision
        self.log_path = self.spawned.log_path
        self._stacks = self.spawned.stacks
        threading.Thread(target=self._read_results, args=(self.spawned.results_r, self.spawned.outputs),
                         daemon=True).start()

    def entry_s(self, entered: object, limit_s: float) -> float | None:
        """Seconds from this worker's spawn to its first line, from the instant it reported
        (``messages.ENTERED_AT``: its own word, shown and never used); None where it sent none or one
        that cannot be (before its spawn, or after ``limit_s``)."""
        if self.spawned is None or type(entered) is not float:
            return None
        seconds = entered - self.spawned.started_at
        return seconds if 0.0 <= seconds <= limit_s else None

    def _read_results(self, results_r: int, outputs: int | None) -> None:
        if outputs is not None:
            self.places[FILE_KEY] = functools.partial(output_reader.read, outputs)
        while True:
            try:
                received = protocol.receive_message(results_r, messages.REPLIES, self.places)
                for settle in self.settlers:
                    settle()
                self.messages.put(received._replace(read_at=time.perf_counter()))
            except BaseException as error:  # EOF, a malformed message: either ends the channel
                self.messages.put(error)
                return

    def send(self, request: messages.Request) -> None:
        protocol.send_message(self.spawned.commands_w, request)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_text(self) -> str:
        """How the worker ended, waiting for it to be reaped."""
        assert self.process is not None
        self.process.wait()
        return describe_exit(self.process.returncode)

    def mark_stacks(self) -> None:
        """A request is being sent: a dump of its stacks starts after what the file holds now."""
        self._stacks_mark = os.fstat(self._stacks.fileno()).st_size

    def stacks(self, wait_s: float = STACK_WAIT_S) -> str:
        """Every thread's Python stack of a worker past its limit, before it is killed: what its
        watchdog wrote since the request was sent (stack_dump.stacks_before_the_limit), else what
        its faulthandler writes on SIGUSR1 within ``wait_s``, else how its threads stood, read from
        /proc (no Python stack, but where each thread waits and where SIGUSR1 went). Empty under a
        wrapper (compute-sanitizer: its pid is not the worker's). Shown to the user, never trusted."""
        if self.process is None or self.process.poll() is not None or self.command_prefix:
            return ""
        fd = self._stacks.fileno()
        start = getattr(self, "_stacks_mark", 0)  # anything written before the request is not its dump
        if os.fstat(fd).st_size == start:  # no watchdog dump: ask by signal
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGUSR1)
            _wait_for_growth(fd, start, wait_s)
        size = os.fstat(fd).st_size
        if size == start:
            return "no Python stack came back (neither the watchdog nor SIGUSR1 wrote one); " + thread_states(
                self.process.pid)
        keep = 4 * protocol.TRACEBACK_CHARS
        text = os.pread(fd, max(0, min(keep, size - start)), max(start, size - keep)).decode(errors="replace")
        return protocol.tail(text)

    def kill(self) -> None:
        """End the worker and everything it started (``SpawnedWorker.kill``)."""
        if self.spawned is not None:
            self.spawned.kill()

    def close(self) -> None:
        """End the worker and remove its folder. A worker under a wrapper (compute-sanitizer, Nsight
        Compute: they write their reports as it exits) is asked to stop and given 10 s; a bare one
        is killed at once: it holds nothing to save, and its interpreter's and CUDA's orderly
        teardown took 0.6-1.1 s of every run (H100, docs/results.md run 11)."""
        if self.spawned is None:
            return
        if self.command_prefix:
            with contextlib.suppress(OSError):
                self.send(messages.Stop())
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.spawned.process.wait(timeout=10)
        self.spawned.end()
        self.spawned = None

    def output_tail(self, limit: int = 2000) -> str:
        """The last characters the submission printed (shown to the user, never parsed)."""
        try:
            return self.log_path.read_bytes()[-limit:].decode(errors="replace")
        except (OSError, AttributeError):
            return ""
