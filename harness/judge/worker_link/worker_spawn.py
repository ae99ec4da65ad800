"""Start one worker process, confined, before anything about its submission is known; imports no torch.

The worker runs in its own session with a scrubbed environment (no secrets), its own working
directory, a memory cap and its output captured to a file that is shown, never parsed. It is
started through ``harness.judge.worker_link.worker_reaper``, the process between the two that ends
whatever the submission started. Nothing here needs torch, so ``python -m harness eval`` can start
its worker before the parent's own ``import torch`` (3-4 s each, overlapped: issue 33); what is
said over the pipes is ``worker_process``'s and ``worker_channel``'s business.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib.machinery
import importlib.util
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harness.contract.cache_home import HARNESS_KERNELS, TRITON_KEY
from harness.contract.output_file import FILE_BYTES
from harness.judge.worker_link import channel_sockets, compile_cache, host_share, input_stage, worker_confinement
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

WORKER_MODULE = "harness.worker.boot"
"""The worker's entry module: also how a worker is told from its reaper in a process listing."""
_WORKER_ENTRY = f"import sys; from {WORKER_MODULE} import main; sys.exit(main(sys.argv[1:]))"
_REAPER_ENTRY = "import sys; from harness.judge.worker_link.worker_reaper import main; sys.exit(main(sys.argv[1:]))"
KEY_BYTES = 32
REAPER_GRACE_S = 5.0
"""How long kill() lets the reaper end the worker's processes before it kills the group itself."""


def new_key_pipe() -> tuple[bytes, int]:
    """A fresh key, and the read end of a pipe holding it and the staging key derived from it (for the
    worker; close it after spawning)."""
    key = secrets.token_bytes(KEY_BYTES)
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, key + input_stage.stage_key(key))
    finally:
        os.close(write_fd)
    return key, read_fd


def new_output_file() -> int | None:
    """A new output file for one worker (None where the system has no memfd: outputs use the pipe).

    Its size is fixed at FILE_BYTES and sealed: the worker can neither grow it (host memory beyond
    the largest output) nor shrink it (a mapping of it past its end would fault)."""
    if not hasattr(os, "memfd_create") or not hasattr(fcntl, "F_ADD_SEALS"):
        return None
    fd = os.memfd_create("nvfp4-outputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, FILE_BYTES)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    return fd


def worker_environment(device: str, visible_devices: str | None) -> dict[str, str]:
    """The parent's environment minus anything secret, plus what the worker needs."""
    env = {k: v for k, v in os.environ.items() if not any(marker in k.upper() for marker in SECRET_MARKERS)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # it reads the parent's bytecode (PYTHONPYCACHEPREFIX) and writes none
    for name in (HARNESS_KERNELS, TRITON_KEY):  # the parent's Triton cache and the key of Triton's install
        if os.environ.get(name):  # (harness/kernel_cache.py, harness/triton_key.py): read, never written
            env[name] = os.environ[name]
    env.update(host_share.thread_env(env))  # torch's threads and the core's digest: this evaluation's share
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton submissions run through the interpreter
    if visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_devices
    preload = thread_name_preload()
    if preload is not None:  # CUDA's thread names under Landlock (harness/worker/csrc/preload.c)
        env["LD_PRELOAD"] = ":".join(filter(None, [str(preload), env.get("LD_PRELOAD")]))
    return env


def thread_name_preload() -> Path | None:
    """The worker's preload library where it was built (setup.py), else None: the worker's Landlock
    rules then leave its threads' folders writable, which CUDA needs (docs/security.md)."""
    return next((path for suffix in importlib.machinery.EXTENSION_SUFFIXES
                 if (path := REPO_ROOT / "harness" / "worker" / f"_preload{suffix}").is_file()), None)


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


def _torch_file() -> Path:
    """torch's __init__.py, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    return Path(spec.origin if spec and spec.origin else sys.executable)


def unprivileged_uid(submission: Path | None = None) -> int | None:
    """The uid the worker drops to: only when the evaluator is root and that uid can read the code
    (the harness's, and ``submission`` when given)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    return worker_confinement.UNPRIVILEGED_UID if unreachable_code(submission) is None else None


def unreachable_code(submission: Path | None = None) -> tuple[Path, Path] | None:
    """(a file the worker needs, where the unprivileged uid is stopped on its way to it), or None
    when that uid can read the interpreter, the worker's code, torch and ``submission``."""
    needed = [Path(sys.executable), REPO_ROOT / "harness" / "worker" / "serve_loop.py", _torch_file()]
    if submission is not None:
        needed.append(submission)
    for path in needed:
        blocked = worker_confinement.blocked_at(path)
        if blocked is not None:
            return path.resolve(), blocked
    return None


def kept_root(submission: Path) -> str | None:
    """Why a worker started here for ``submission`` would keep root (one line with the fix), or None.

    A root worker reads every process's /proc files, the evaluator's open descriptors among them, so a
    ranked GPU run (which needs a root evaluator for its supervisor) refuses to start one."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    if "uid" not in worker_confinement.chosen_steps():
        return (f"the sandbox step 'uid' is off ({worker_confinement.STEPS_ENV}): a worker would run as root; "
                "name it there, or leave the variable unset")
    unreachable = unreachable_code(submission)
    if unreachable is None:
        return None
    needed, blocked = unreachable
    return (f"a worker would run as root: uid {worker_confinement.UNPRIVILEGED_UID} cannot reach {needed} "
            f"(stopped at {blocked}); make it searchable and readable by other users (chmod o+rx), or install "
            "Python and the harness where they are")


def workers_run_unprivileged() -> bool:
    """Whether workers started here run as another user than this process (the sandbox's uid step)."""
    return "uid" in worker_confinement.chosen_steps() and unprivileged_uid() is not None


def unreadable_problem(task_py: Path, submission: Path) -> str | None:
    """Why a worker started here for ``submission`` could not import the problem's ``task.py`` (one
    line with the fix), or None. Under a root evaluator it is uid 65534 wherever it can read the code:
    a problem kept in a private folder crashed every worker at its import, with a PermissionError that
    named the submission."""
    if "uid" not in worker_confinement.chosen_steps() or not task_py.is_file() or unprivileged_uid(submission) is None:
        return None
    blocked = worker_confinement.blocked_at(task_py)
    if blocked is None:
        return None
    return (f"the workers run as uid {worker_confinement.UNPRIVILEGED_UID} and cannot read {task_py.resolve()} "
            f"(stopped at {blocked}); make the problem's folder readable by other users (chmod o+rx on it and "
            "its parents), or keep problems where they are")


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker is started for, none of it about the submission: two specs equal means one
    started for the first can serve the second. ``command_prefix`` wraps it (compute-sanitizer);
    ``keep_uid``: no uid drop (Nsight Compute reads counters the driver keeps for admins)."""

    device: str
    visible_devices: str | None = None
    command_prefix: tuple[str, ...] = ()
    keep_uid: bool = False

    def drop_to_uid(self, steps: frozenset[str], submission: Path | None) -> int | None:
        """The uid a worker of this spec runs as for ``submission`` (None: unknown yet, or kept)."""
        return unprivileged_uid(submission) if "uid" in steps and not self.keep_uid else None


@dataclass
class SpawnedWorker:
    """A started worker's process and the parent's ends of it: pipes, key, folder, stacks file, log."""

    spec: WorkerSpec
    process: subprocess.Popen[bytes]
    commands_w: int
    results_r: int
    key: bytes
    workdir: tempfile.TemporaryDirectory[str]
    stacks: IO[bytes]
    supervision: Supervision
    steps: frozenset[str]
    drop_to_uid: int | None
    cache_root: Path | None  # the compile caches' root the worker may write under until its Start
    blank: bool  # started before its submission was known (blank_workers)
    outputs: int | None  # the parent's output file (new_output_file), None where there is no memfd
    stage: int | None  # the parent's staging file (input_stage.new_stage_file), None where there is no memfd
    started_at: float = field(default_factory=time.perf_counter)

    @property
    def log_path(self) -> Path:
        return Path(self.workdir.name) / "submission-output.log"

    def kill(self) -> None:
        """End the worker and everything it started: the reaper kills them (SIGTERM asks it), and
        if it has not ended within REAPER_GRACE_S, SIGKILL goes to the whole process group."""
        if REAPED and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=REAPER_GRACE_S)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def end(self) -> None:
        """Kill the worker and free the parent's ends of it: its supervisor, pipes, files, folder."""
        self.kill()
        self.supervision.close()
        os.close(self.commands_w)
        os.close(self.results_r)
        self.stacks.close()
        for fd in (self.outputs, self.stage):
            if fd is not None:
                os.close(fd)
        self.workdir.cleanup()


def ahead_capability(device: str) -> str:
    """The GPU's compute capability ("90") for a blank worker to compile the draws' kernels for before
    its file comes (harness/worker/compile_ahead.py), where this process already runs CUDA (a
    leaderboard, the service, a cluster worker: files before have); "-" elsewhere. Imports no torch."""
    torch = sys.modules.get("torch")
    if torch is None or not device.startswith("cuda") or not torch.cuda.is_initialized():
        return "-"
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    return str(10 * major + minor)


def spawn(spec: WorkerSpec, submission: Path | None = None, warm: bool = False) -> SpawnedWorker:
    """Start a worker for ``spec``; ``submission`` None for a blank worker (its uid is decided
    without the file, and checked against it when the file comes). ``warm``: the worker makes its
    CUDA context before the Start request (only where no other run's timed calls can be on the GPU)."""
    keep_evaluator_private()
    workdir = tempfile.TemporaryDirectory(prefix="nvfp4-worker-")
    steps = worker_confinement.chosen_steps()
    parent = os.getpid()
    drop_to_uid = spec.drop_to_uid(steps, submission)
    if drop_to_uid is not None:
        os.chown(workdir.name, drop_to_uid, drop_to_uid)
    commands_w, commands_r = channel_sockets.channel(parent_sends=True)
    results_r, results_w = channel_sockets.channel(parent_sends=False)
    # The key reaches the worker's compiled core through a pipe it closes before the import.
    key, key_r = new_key_pipe()
    # The syscall supervisor, a thread of the reaper, takes the worker's seccomp listener.
    guard = Supervision(REAPED and "syscalls" in steps and not spec.command_prefix)
    # Its stacks at a timeout go to a file of the parent's, unlinked and outside the worker's
    # folder: the worker holds only the descriptor, so it cannot point the parent at another file.
    stacks = tempfile.TemporaryFile(prefix="nvfp4-stacks-")  # noqa: SIM115 (closed by WorkerProcess.close)
    stacks_w = stacks.fileno()
    # Large outputs come back through a file of the parent's, not the result pipe (output_reader).
    outputs = new_output_file()
    # Ranked CPU calls' inputs come encrypted through another (input_stage; a GPU's core draws its own);
    # the worker's end is read-only.
    stage, stage_r = (input_stage.new_stage_file() if spec.device == "cpu" else None) or (None, None)
    output_fds = [fd for fd in (outputs, stage_r) if fd is not None]
    env = worker_environment(spec.device, spec.visible_devices)
    env.update(HOME=workdir.name, TMPDIR=workdir.name, NVFP4_WORKDIR=workdir.name,
               **compile_cache.environment(Path(workdir.name) / "compile-cache"))
    # The caches' root is writable until the Start request narrows the worker to one owner's folder.
    root = compile_cache.root_for(drop_to_uid) if not spec.command_prefix else None
    worker_fds = [commands_r, results_w, key_r, stacks_w, *output_fds] + ([guard.worker_end] if guard.expected else [])
    command = [*spec.command_prefix, sys.executable, "-c", _WORKER_ENTRY, str(commands_r), str(results_w),
               str(key_r), ",".join(steps), str(stacks_w), str(guard.worker_end) if guard.expected else "-",
               spec.device if warm else "-", str(root) if root else "-", str(outputs) if outputs is not None else "-",
               str(stage_r) if stage_r is not None else "-",
               ahead_capability(spec.device) if submission is None and not warm else "-"]
    if REAPED:
        command = [sys.executable, "-c", _REAPER_ENTRY, "-" if drop_to_uid is None else str(drop_to_uid),
                   "pidns" if "pidns" in steps else "-", ",".join(map(str, worker_fds)),
                   f"{guard.supervisor_end},{guard.report_w}" if guard.expected else "-", *command]
    log_path = Path(workdir.name) / "submission-output.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            pass_fds=(commands_r, results_w, key_r, stacks_w, *output_fds, *guard.passed_fds()),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir.name,
            env=env,
            start_new_session=True,
            preexec_fn=lambda: _child_setup(spec.device, drop_to_uid, steps, parent),
        )
    for fd in (commands_r, results_w, key_r, *([stage_r] if stage_r is not None else [])):
        os.close(fd)
    guard.spawned()
    return SpawnedWorker(spec, process, commands_w, results_r, key, workdir, stacks, guard, steps, drop_to_uid, root,
                         submission is None, outputs, stage)
