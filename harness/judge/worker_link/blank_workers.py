"""Blank workers: started before their submission is known, each handed exactly one file.

A worker's start (interpreter, torch, the harness's worker modules, the sandbox) costs 3-4 s and
depends on nothing of the submission. Two places start one early (issue 33):

- ``prestart_for_command``: ``python -m harness eval`` (and ``leaderboard`` without a cluster, for its
  first file) starts its worker before the parent imports torch, so the two imports overlap; that
  worker also makes its CUDA context and loads the draws' kernels before Start (no other run is on
  the GPU then).
- ``keep_one_ahead``: where files run one after another in one process (``run_job``: the
  leaderboard, the service, a cluster worker), every worker taken from the shelf is replaced by a
  blank one for the next file at once. That one imports and compiles the input draws' Triton kernels
  (harness/worker/compile_ahead.py: no CUDA context, which would touch the GPU during the current
  file's timed calls); its CUDA context is made after its Start.

Isolation stays: ``take`` removes the worker from the shelf, so a blank worker serves one
submission and is never reused; a blank worker whose spec or uid does not fit the file is killed,
not handed over, and so is one that another run's submission stopped (it runs as the same
unprivileged uid while the blank worker waits, and may signal it: a stopped worker would hang the
next author's run); whatever is left on the shelf is killed by ``discard`` (the executors' close) or
when this process exits. Imports no torch.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path

from harness.judge.worker_link import worker_confinement, worker_spawn
from harness.judge.worker_link.worker_spawn import SpawnedWorker, WorkerSpec


class Shelf:
    """At most one blank worker per spec, for one process's evaluations (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blank: dict[WorkerSpec, SpawnedWorker] = {}
        self.ahead = False  # replace each taken worker with a blank one (keep_one_ahead)
        self.handed = 0  # blank workers handed to a submission (tests read it)
        atexit.register(self.discard)

    def put(self, spec: WorkerSpec, warm: bool = False) -> None:
        """Start a blank worker for ``spec`` unless one is waiting already."""
        with self._lock:
            waiting = self._blank.get(spec)
            if waiting is not None and waiting.process.poll() is None:
                return
            self._blank[spec] = worker_spawn.spawn(spec, None, warm=warm)
        if waiting is not None:
            waiting.end()

    def take(self, spec: WorkerSpec, submission: Path) -> SpawnedWorker | None:
        """The blank worker for ``spec`` that fits ``submission`` (off the shelf for good), or None.
        One that does not fit (another uid than this file allows, other sandbox steps than chosen now)
        or died is killed."""
        with self._lock:
            blank = self._blank.pop(spec, None)
        if blank is None:
            return None
        steps = worker_confinement.chosen_steps()
        if (blank.process.poll() is None and not stopped_below(blank.process.pid) and blank.steps == steps
                and blank.drop_to_uid == spec.drop_to_uid(steps, submission)):
            self.handed += 1
            return blank
        blank.end()
        return None

    def worker_for(self, spec: WorkerSpec, submission: Path) -> SpawnedWorker:
        """A worker for ``submission``: a blank one when one fits, else a fresh one; with ``ahead``,
        a blank one for the next file is started right after."""
        spawned = self.take(spec, submission) or worker_spawn.spawn(spec, submission)
        if self.ahead and spec == WorkerSpec(spec.device, spec.visible_devices):  # plain workers only
            self.put(spec)
        return spawned

    def waiting(self) -> list[SpawnedWorker]:
        with self._lock:
            return list(self._blank.values())

    def discard(self) -> None:
        """Kill every blank worker still waiting (none of them ever saw a file)."""
        with self._lock:
            left, self._blank = list(self._blank.values()), {}
        for blank in left:
            blank.end()


SHELF = Shelf()


def keep_one_ahead() -> None:
    """From now on this process runs files one after another: keep a blank worker for the next."""
    SHELF.ahead = True


def prestart_for_command(argv: list[str]) -> None:
    """``python -m harness eval ...``, or ``leaderboard`` without a cluster (its files one after another
    in this process): start the first worker now, before the parent's heavy imports. It makes its CUDA
    context at once: nothing is timed on the GPU before its own file.

    Reads only what it must from the command line (the parser proper runs later): the device
    (``--device``, else cuda where an NVIDIA device node exists) and whether the mode's workers
    are plain (sanitize mode wraps every worker; a cluster's workers start their own). A guess that
    turns out wrong costs nothing but a killed blank worker."""
    if not argv or argv[0] not in ("eval", "leaderboard") or {"-h", "--help"} & set(argv):
        return
    options = dict(option_values(argv[1:]))
    if options.get("--mode") == "sanitize" or "--cluster" in options:
        return
    device = options.get("--device") or guess_device()
    SHELF.put(WorkerSpec(device), warm=device == "cuda")


def option_values(args: list[str]) -> list[tuple[str, str]]:
    """('--name', value) pairs, both as '--name value' and '--name=value'."""
    pairs = []
    for at, arg in enumerate(args):
        if arg.startswith("--") and "=" in arg:
            pairs.append(tuple(arg.split("=", 1)))
        elif arg.startswith("--") and at + 1 < len(args):
            pairs.append((arg, args[at + 1]))
    return pairs


def stopped_below(pid: int) -> bool:
    """Whether ``pid`` or any process below it is stopped (SIGSTOP, SIGTSTP) or traced (Linux /proc;
    False where it cannot be read: the process is gone, which ``poll`` tells)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (OSError, IndexError):
        return False
    return state in ("T", "t") or any(stopped_below(int(child)) for child in children)


def guess_device() -> str:
    """cuda where the NVIDIA driver's device node exists and CUDA_VISIBLE_DEVICES hides nothing."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return "cpu"
    return "cuda" if Path("/dev/nvidiactl").exists() else "cpu"
