"""The trusted side of one worker process: spawn it, talk to it, bound it in time, kill it.

The worker runs in its own process group with a scrubbed environment (no secrets), its own
working directory and its output captured to a file that is shown, never parsed. Anything
unexpected on the result channel, a death by signal or a stage past its time limit ends as a
``WorkerFailure`` carrying one status and one line of reason.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness import protocol, sandbox, seal, timing
from harness.results import Status
from harness.task import Task

REPO_ROOT = Path(__file__).resolve().parent.parent
SECRET_MARKERS = ("SECRET", "TOKEN", "PASSWORD", "NVFP4_")
CPU_ADDRESS_SPACE_BYTES = 16 << 30
"""Host memory cap (RLIMIT_AS) for CPU runs, so a runaway submission fails alone."""
GPU_HOST_DATA_BYTES = 32 << 30
"""Host memory cap for GPU runs. CUDA reserves vast virtual ranges, so RLIMIT_AS cannot be used;
RLIMIT_DATA counts private writable memory only (checked on an H100, torch 2.11: CUDA, pinned
memory and Triton work under 16 GiB, and a 1 TiB bytearray raises MemoryError). Without it a
host that overcommits lets one submission exhaust the machine's memory."""

_WORKER_ENTRY = "import sys; from harness.worker import main; sys.exit(main(sys.argv[1:]))"


class WorkerFailure(Exception):
    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class CallOutput:
    """One call's result; ``sealed`` when its MAC was verified against the parent's key."""

    time_us: float
    host_us: float
    output: Any  # a tensor, a list of tensors, or a string saying why it is neither
    unfinished: bool
    sealed: bool = False
    exposed: bool = False  # the queued sleep ran out before the call was queued: time not trusted


def worker_environment(device: str, visible_devices: str | None) -> dict[str, str]:
    """The parent's environment minus anything secret, plus what the worker needs."""
    env = {k: v for k, v in os.environ.items() if not any(marker in k.upper() for marker in SECRET_MARKERS)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton submissions run through the interpreter
    if visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_devices
    return env


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


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        name = signal.Signals(-code).name
        hint = {
            "SIGSEGV": " (segmentation fault)",
            "SIGKILL": " (killed: out of host memory, or by the harness)",
            "SIGABRT": " (aborted)",
            "SIGBUS": " (bus error)",
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


def _die_with(parent: int) -> None:
    """The worker is killed when its evaluator dies (a Dask worker killed mid-job, say), rather than
    keep a GPU busy beside the job's retry. Set after the uid change, which would clear it."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the evaluator died before the signal was armed
            os._exit(1)


def _child_setup(device: str, drop_to_uid: int | None, steps: frozenset[str], parent: int) -> None:
    """In the forked child: cap host memory, confine (harness.sandbox.before_exec), die with the parent."""
    import resource

    if device == "cpu":
        resource.setrlimit(resource.RLIMIT_AS, (CPU_ADDRESS_SPACE_BYTES, CPU_ADDRESS_SPACE_BYTES))
    else:
        resource.setrlimit(resource.RLIMIT_DATA, (GPU_HOST_DATA_BYTES, GPU_HOST_DATA_BYTES))
    sandbox.before_exec(drop_to_uid, steps)
    _die_with(parent)


def _unprivileged_uid(submission: Path | None = None) -> int | None:
    """The uid the worker drops to: only when the evaluator is root and that uid can read the code
    (the harness's, and ``submission`` when given)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    needed = [Path(sys.executable), REPO_ROOT / "harness" / "worker.py", Path(torch.__file__)]
    if submission is not None:
        needed.append(submission)
    return sandbox.UNPRIVILEGED_UID if all(sandbox.readable_by_others(p) for p in needed) else None


def workers_run_unprivileged() -> bool:
    """Whether workers started here run as another user than this process (the sandbox's uid step)."""
    return "uid" in sandbox.chosen_steps() and _unprivileged_uid() is not None


class WorkerSession:
    """One worker process for one submission; use as a context manager."""

    def __init__(self, task: Task, submission: Path, device: str, visible_devices: str | None = None,
                 command_prefix: list[str] | None = None) -> None:
        self.task = task
        self.submission = submission
        self.device = device
        self.visible_devices = visible_devices
        self.command_prefix = list(command_prefix or [])  # a wrapper of the worker, e.g. compute-sanitizer
        self._messages: queue.Queue[tuple[dict[str, Any], list[Any]] | BaseException] = queue.Queue()
        self.sealed = False
        self.overhead_us: float | None = None

    def __enter__(self) -> WorkerSession:
        keep_evaluator_private()
        self._workdir = tempfile.TemporaryDirectory(prefix="nvfp4-worker-")
        self.log_path = Path(self._workdir.name) / "submission-output.log"
        steps = sandbox.chosen_steps()
        parent = os.getpid()
        drop_to_uid = _unprivileged_uid(self.submission) if "uid" in steps else None
        if drop_to_uid is not None:
            os.chown(self._workdir.name, drop_to_uid, drop_to_uid)
        commands_r, self._commands_w = os.pipe()
        self._results_r, results_w = os.pipe()
        _widen_pipe(results_w)
        # The key reaches the worker's compiled core through a pipe it closes before the import.
        self._key, key_r = seal.new_key_pipe()
        self._next_index = 0
        self._prepare_pending = False
        env = worker_environment(self.device, self.visible_devices)
        env.update(HOME=self._workdir.name, TMPDIR=self._workdir.name,
                   TRITON_CACHE_DIR=str(Path(self._workdir.name) / "triton-cache"), NVFP4_WORKDIR=self._workdir.name)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [*self.command_prefix, sys.executable, "-c", _WORKER_ENTRY, str(commands_r), str(results_w),
                 str(key_r), ",".join(steps)],
                pass_fds=(commands_r, results_w, key_r),
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
        threading.Thread(target=self._read_results, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_results(self) -> None:
        while True:
            try:
                self._messages.put(protocol.receive(self._results_r))
            except BaseException as error:  # EOF, a malformed message: either ends the channel
                self._messages.put(error)
                return

    def _kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def close(self) -> None:
        if getattr(self, "process", None) is None:
            return
        with contextlib.suppress(OSError):
            protocol.send(self._commands_w, {"op": "stop"})
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self._kill()  # also ends anything the submission left running in its process group
        os.close(self._commands_w)
        os.close(self._results_r)
        self._workdir.cleanup()
        self.process = None

    def output_tail(self, limit: int = 2000) -> str:
        """The last characters the submission printed (shown to the user, never parsed)."""
        try:
            return self.log_path.read_bytes()[-limit:].decode(errors="replace")
        except OSError:
            return ""

    def _expect(self, op: str, stage: str, timeout_s: float) -> tuple[dict[str, Any], list[Any]]:
        try:
            message = self._messages.get(timeout=timeout_s)
        except queue.Empty:
            self._kill()
            raise WorkerFailure(
                Status.TIMEOUT,
                f"{stage} took longer than {timeout_s:g} s (task.yml timeouts_s); the worker was killed",
            ) from None
        if isinstance(message, EOFError):
            self.process.wait()
            raise WorkerFailure(Status.CRASHED, f"the worker {_describe_exit(self.process.returncode)} during {stage}")
        if isinstance(message, BaseException):
            self._kill()
            raise WorkerFailure(
                Status.REJECTED, f"something other than the harness wrote to the result channel ({message})"
            )
        header, tensors = message
        if header["op"] == "error":
            self._kill()
            status = {
                "bad_input": Status.BAD_INPUT,
                "cuda_error": Status.CUDA_ERROR,
                "rejected": Status.REJECTED,
                "failed": Status.FAILED,
                "harness_fault": Status.HARNESS_FAULT,
            }.get(str(header.get("kind")), Status.CRASHED)
            raise WorkerFailure(status, f"{header.get('message', 'unknown error')} (during {stage})")
        if header["op"] != op:
            self._kill()
            raise WorkerFailure(Status.REJECTED, f"unexpected '{header['op']}' message on the result channel")
        return header, tensors

    def _ensure_quiet(self) -> None:
        """Every reply answers one request: an extra message means someone else wrote one."""
        if not self._messages.empty():
            message = self._messages.get()
            if isinstance(message, EOFError):
                self._messages.put(message)
                return
            self._kill()
            raise WorkerFailure(Status.REJECTED, "an unrequested message appeared on the result channel")

    def start(self) -> dict[str, Any]:
        """Import the submission in the worker; returns the worker's 'ready' header."""
        protocol.send(
            self._commands_w,
            {
                "op": "start",
                "device": self.device,
                "reference_module": self.task.reference_module,
                "task_py": str(self.task.task_py),
                "submission": str(self.submission),
            },
        )
        header, _ = self._expect("ready", "import of the submission", self.task.timeouts_s["import"])
        # The parent, not the worker, decides whether results must be sealed: a worker that says it
        # is not (a downgrade) while this install has the core is lying.
        self.sealed = timing.sealed_available()
        if self.sealed and (header.get("sealed") is not True or not isinstance(header.get("overhead_us"), float)):
            self._kill()
            raise WorkerFailure(Status.REJECTED, "the worker did not start the compiled timing core (downgrade)")
        self.overhead_us = header.get("overhead_us")
        return header

    def _request(self, header: dict[str, Any]) -> None:
        if self._prepare_pending:  # every request but a 'prepare' first collects the drawn inputs' reply
            self._await_prepared(self.task.timeouts_s["warmup"])
        self._ensure_quiet()
        with contextlib.suppress(OSError):  # a worker that is gone: _expect reports how it ended
            protocol.send(self._commands_w, header)

    def profile(self, case: dict[str, Any], timeout_s: float) -> str:
        """One call under torch.profiler in the worker; returns its table (shown, not parsed)."""
        self._request({"op": "call", "case": case, "sleep_us": 0.0, "profile": True})
        header, _ = self._expect("profile", "a profiled call", timeout_s)
        return str(header.get("table", ""))[:20000]

    def prepare(self, case: dict[str, Any]) -> None:
        """Ask the worker to draw the next call's inputs now; the reply is read by the next call."""
        self._request({"op": "prepare", "case": case})
        self._prepare_pending = True

    def _await_prepared(self, timeout_s: float) -> dict[str, Any]:
        self._prepare_pending = False
        header, _ = self._expect("prepared", "drawing the inputs", timeout_s)
        return header

    def prepare_inputs(self, case: dict[str, Any], timeout_s: float) -> list[dict[str, Any]]:
        """The worker draws the next call's inputs and says where they lie on the device."""
        self.prepare(case)
        header = self._await_prepared(timeout_s)
        return [t for t in header.get("placements", []) if isinstance(t, dict)]

    def call(self, case: dict[str, Any], sleep_us: float, stage: str, timeout_s: float,
             plain: bool = False) -> CallOutput:
        """One call; ``plain`` (sanitize mode): no timer, no flush, no seal."""
        index, self._next_index = self._next_index, self._next_index + 1
        self._request({"op": "call", "case": case, "sleep_us": sleep_us, "index": index, "plain": plain})
        header, tensors = self._expect("output", stage, timeout_s)
        if self.sealed and not plain:  # a plain call (sanitize mode) is neither timed nor ranked
            self._verify(lambda: seal.verify_call(self._key, index, int(case["seed"]), self.overhead_us, header,
                                                  tensors))
        bad = [t for t in tensors if isinstance(t, str)]
        if bad:
            output: Any = f"custom_kernel returned a {bad[0]}"
        elif header.get("structure") == "tensor" and len(tensors) == 1:
            output = tensors[0]
        else:
            output = list(tensors)
        return CallOutput(
            time_us=float(header["time_us"]),
            host_us=float(header["host_us"]),
            output=output,
            unfinished=bool(header.get("unfinished")),
            sealed=self.sealed,
            exposed=bool(header.get("exposed")),
        )

    def _verify(self, check: Any) -> Any:
        try:
            return check()
        except (seal.SealBroken, KeyError, TypeError, ValueError) as error:
            self._kill()
            raise WorkerFailure(Status.REJECTED, f"{error}; the worker was stopped") from None

    def recheck_overhead(self, timeout_s: float) -> tuple[float, float, float] | None:
        """Ask the core to measure its event overhead again: (in use, fresh, spread), MAC-checked.

        None when results are not sealed (no core). When the fresh value moved and is itself
        consistent the core adopts it, and so does the parent for the calls that follow.
        """
        if not self.sealed:
            return None
        nonce = os.urandom(seal.NONCE_BYTES)
        self._request({"op": "recheck", "nonce": nonce.hex()})
        header, _ = self._expect("recheck", "the event-overhead recheck", timeout_s)
        values = self._verify(lambda: seal.verify_recheck(self._key, nonce, header))
        if values[0] != self.overhead_us:
            self._kill()
            raise WorkerFailure(Status.REJECTED, "the timing core's overhead changed without the harness asking")
        if seal.overhead_moved(*values)[1]:
            self.overhead_us = values[1]
        return values
