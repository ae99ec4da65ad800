"""One worker process, from the parent: spawn it confined, read its messages, end it and all it started.

The worker runs in its own session with a scrubbed environment (no secrets), its own working
directory, a memory cap and its output captured to a file that is shown, never parsed. It is
started through ``harness.judge.worker_link.worker_reaper``, the process between the two that ends whatever the
submission started (its own PID namespace where one can be made). What is said over its pipes is
``harness.judge.worker_link.worker_channel``'s business.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

from harness.contract import messages, protocol
from harness.judge.worker_link import host_share, output_reader, seal, worker_confinement
from harness.judge.worker_link.supervision import Supervision

REPO_ROOT = Path(__file__).resolve().parents[3]
SECRET_MARKERS = ("SECRET", "TOKEN", "PASSWORD", "NVFP4_")
CPU_ADDRESS_SPACE_BYTES = 16 << 30
"""Host memory cap (RLIMIT_AS) for CPU runs, so a runaway submission fails alone."""
GPU_HOST_DATA_BYTES = 32 << 30
"""Host memory cap for GPU runs. CUDA reserves vast virtual ranges, so RLIMIT_AS cannot be used;
RLIMIT_DATA counts private writable memory only (checked on an H100, torch 2.11: CUDA, pinned
memory and Triton work under 16 GiB, and a 1 TiB bytearray raises MemoryError). Without it a
host that overcommits lets one submission exhaust the machine's memory."""

_WORKER_ENTRY = "import sys; from harness.worker.serve_loop import main; sys.exit(main(sys.argv[1:]))"
_REAPER_ENTRY = "import sys; from harness.judge.worker_link.worker_reaper import main; sys.exit(main(sys.argv[1:]))"
REAPER_GRACE_S = 5.0
"""How long kill() lets the reaper end the worker's processes before it kills the group itself."""


def worker_environment(device: str, visible_devices: str | None) -> dict[str, str]:
    """The parent's environment minus anything secret, plus what the worker needs."""
    env = {k: v for k, v in os.environ.items() if not any(marker in k.upper() for marker in SECRET_MARKERS)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(host_share.thread_env(env))  # torch's threads and the core's digest: this evaluation's share
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton submissions run through the interpreter
    if visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_devices
    return env


STACK_WAIT_S = 2.0
"""How long a worker past its time limit may take to write its stacks before it is killed."""

PIPE_BYTES = 1 << 20
"""The result pipe's buffer (Linux's default ceiling, /proc/sys/fs/pipe-max-size): an 8 MiB output
crosses in 8.3 ms instead of 13.5 with the default 64 KiB (this project's CPU machine)."""


def _widen_pipe(fd: int) -> None:
    """Best effort: a larger pipe buffer means fewer wake-ups per output (Linux only). Where the
    system's ceiling is lower than PIPE_BYTES, the ceiling."""
    sizes = [PIPE_BYTES]
    with contextlib.suppress(OSError, ValueError):
        sizes.append(min(PIPE_BYTES, int(Path("/proc/sys/fs/pipe-max-size").read_text())))
    for size in sizes:
        with contextlib.suppress(AttributeError, OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
            return


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


PR_SET_DUMPABLE = 4


def keep_evaluator_private() -> None:
    """Make this process, the evaluator, non-dumpable before it starts a worker.

    A worker runs as the same user, and a same-user process may read another's
    /proc/<pid>/environ (which keeps NVFP4_SECRET_SEED even after it is popped from os.environ)
    and /proc/<pid>/mem (the secret, the expected outputs). A non-dumpable process's /proc files
    belong to root, so the worker reads neither. Root or CAP_SYS_PTRACE still can: run the
    evaluator as an ordinary user (docs/security.md).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


PR_SET_PDEATHSIG = 1
REAPED = sys.platform.startswith("linux")
"""Workers start through harness.judge.worker_link.worker_reaper (Linux: prctl, PID namespaces); elsewhere
directly, in their own session only."""


def _die_with(parent: int, signal_number: int) -> None:
    """The reaper (and through it the worker) ends when its evaluator dies (a Dask worker killed
    mid-job, say), rather than keep a GPU busy beside the job's retry: SIGTERM, so that the reaper
    ends everything the submission started, not only the worker."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0)
        if os.getppid() != parent:  # the evaluator died before the signal was armed
            os._exit(1)


def _child_setup(device: str, drop_to_uid: int | None, steps: frozenset[str], parent: int) -> None:
    """In the forked child: cap host memory, confine (harness.worker_confinement.before_exec), die with the parent.

    With the reaper, the uid is dropped there, in the worker's process; without it, here."""
    import resource

    if device == "cpu":
        resource.setrlimit(resource.RLIMIT_AS, (CPU_ADDRESS_SPACE_BYTES, CPU_ADDRESS_SPACE_BYTES))
    else:
        resource.setrlimit(resource.RLIMIT_DATA, (GPU_HOST_DATA_BYTES, GPU_HOST_DATA_BYTES))
    worker_confinement.before_exec(steps)
    if drop_to_uid is not None and not REAPED:
        worker_confinement.drop_privileges(drop_to_uid)
    _die_with(parent, signal.SIGTERM if REAPED else signal.SIGKILL)


def unprivileged_uid(submission: Path | None = None) -> int | None:
    """The uid the worker drops to: only when the evaluator is root and that uid can read the code
    (the harness's, and ``submission`` when given)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    return worker_confinement.UNPRIVILEGED_UID if unreachable_code(submission) is None else None


def unreachable_code(submission: Path | None = None) -> tuple[Path, Path] | None:
    """(a file the worker needs, where the unprivileged uid is stopped on its way to it), or None
    when that uid can read the interpreter, the worker's code, torch and ``submission``."""
    needed = [Path(sys.executable), REPO_ROOT / "harness" / "worker" / "serve_loop.py", Path(torch.__file__)]
    if submission is not None:
        needed.append(submission)
    for path in needed:
        blocked = worker_confinement.blocked_at(path)
        if blocked is not None:
            return path.resolve(), blocked
    return None


def workers_run_unprivileged() -> bool:
    """Whether workers started here run as another user than this process (the sandbox's uid step)."""
    return "uid" in worker_confinement.chosen_steps() and unprivileged_uid() is not None


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
        if "serve_loop" not in command or "worker_reaper" in command:
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
    """One spawned worker: its process group, pipes, key, work folder and log."""

    def __init__(self, submission: Path, device: str, visible_devices: str | None,
                 command_prefix: list[str], keep_uid: bool = False) -> None:
        self.submission = submission
        self.device = device
        self.visible_devices = visible_devices
        self.command_prefix = command_prefix  # a wrapper of the worker, e.g. compute-sanitizer
        self.keep_uid = keep_uid  # no uid drop: Nsight Compute reads counters the driver keeps for admins
        self.messages: queue.Queue[protocol.Received | BaseException] = queue.Queue()
        self.process: subprocess.Popen[bytes] | None = None
        self.supervision = Supervision(False)  # the syscall supervisor's record, once spawned with one

    def spawn(self) -> None:
        """Start the worker; its messages are read on a thread into ``messages``."""
        keep_evaluator_private()
        self._workdir = tempfile.TemporaryDirectory(prefix="nvfp4-worker-")
        self.log_path = Path(self._workdir.name) / "submission-output.log"
        steps = worker_confinement.chosen_steps()
        parent = os.getpid()
        drop_to_uid = unprivileged_uid(self.submission) if "uid" in steps and not self.keep_uid else None
        if drop_to_uid is not None:
            os.chown(self._workdir.name, drop_to_uid, drop_to_uid)
        commands_r, self._commands_w = os.pipe()
        self._results_r, results_w = os.pipe()
        _widen_pipe(results_w)
        # The key reaches the worker's compiled core through a pipe it closes before the import.
        self.key, key_r = seal.new_key_pipe()
        # The syscall supervisor, a thread of the reaper, takes the worker's seccomp listener.
        self.supervision = Supervision(REAPED and "syscalls" in steps and not self.command_prefix)
        guard = self.supervision
        # Its stacks at a timeout go to a file of the parent's, unlinked and outside the worker's
        # folder: the worker holds only the descriptor, so it cannot point the parent at another file.
        self._stacks = tempfile.TemporaryFile(prefix="nvfp4-stacks-")  # noqa: SIM115 (closed by close())
        stacks_w = self._stacks.fileno()
        # Large outputs come back through a file of the parent's, not the result pipe (output_reader).
        self._outputs = output_reader.create()
        outputs = [] if self._outputs is None else [self._outputs]
        env = worker_environment(self.device, self.visible_devices)
        env.update(HOME=self._workdir.name, TMPDIR=self._workdir.name,
                   TRITON_CACHE_DIR=str(Path(self._workdir.name) / "triton-cache"), NVFP4_WORKDIR=self._workdir.name)
        worker_fds = [commands_r, results_w, key_r, stacks_w, *outputs] + ([guard.worker_end] if guard.expected else [])
        command = [*self.command_prefix, sys.executable, "-c", _WORKER_ENTRY, str(commands_r), str(results_w),
                   str(key_r), ",".join(steps), str(stacks_w), str(guard.worker_end) if guard.expected else "-",
                   str(outputs[0]) if outputs else "-"]
        if REAPED:
            command = [sys.executable, "-c", _REAPER_ENTRY, "-" if drop_to_uid is None else str(drop_to_uid),
                       "pidns" if "pidns" in steps else "-", ",".join(map(str, worker_fds)),
                       f"{guard.supervisor_end},{guard.report_w}" if guard.expected else "-", *command]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command,
                pass_fds=(commands_r, results_w, key_r, stacks_w, *outputs, *guard.passed_fds()),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._workdir.name,
                env=env,
                start_new_session=True,
                preexec_fn=lambda: _child_setup(self.device, drop_to_uid, steps, parent),
            )
        for fd in (commands_r, results_w, key_r):
            os.close(fd)
        guard.spawned()
        threading.Thread(target=self._read_results, daemon=True).start()

    def _read_results(self) -> None:
        fetch = None if self._outputs is None else functools.partial(output_reader.read, self._outputs)
        while True:
            try:
                self.messages.put(protocol.receive_message(self._results_r, messages.REPLIES, fetch))
            except BaseException as error:  # EOF, a malformed message: either ends the channel
                self.messages.put(error)
                return

    def send(self, request: messages.Request) -> None:
        protocol.send_message(self._commands_w, request)

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
        watchdog wrote since the request was sent (serve_loop.stacks_before_the_limit), else what
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
        """End the worker and everything it started: the reaper kills them (SIGTERM asks it), and
        if it has not ended within REAPER_GRACE_S, SIGKILL goes to the whole process group."""
        if self.process is None:
            return
        if REAPED and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=REAPER_GRACE_S)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def close(self) -> None:
        """End the worker and remove its folder. A worker under a wrapper (compute-sanitizer, Nsight
        Compute: they write their reports as it exits) is asked to stop and given 10 s; a bare one
        is killed at once: it holds nothing to save, and its interpreter's and CUDA's orderly
        teardown took 0.6-1.1 s of every run (H100, docs/results.md run 11)."""
        if self.process is None:
            return
        if self.command_prefix:
            with contextlib.suppress(OSError):
                self.send(messages.Stop())
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        self.kill()
        self.supervision.close()
        os.close(self._commands_w)
        os.close(self._results_r)
        self._stacks.close()
        if self._outputs is not None:
            os.close(self._outputs)
        self._workdir.cleanup()
        self.process = None

    def output_tail(self, limit: int = 2000) -> str:
        """The last characters the submission printed (shown to the user, never parsed)."""
        try:
            return self.log_path.read_bytes()[-limit:].decode(errors="replace")
        except (OSError, AttributeError):
            return ""
