"""The Dask cluster ``--cluster local`` starts on this host: one pinned worker per GPU, and its quick end.

Each worker is a Nanny-managed process started with ``CUDA_VISIBLE_DEVICES`` naming its one GPU
and offering one ``GPU`` resource (for the CPU: one per core, up to ``CPU_WORKERS_MAX``), the same
as a ``dask worker --resources GPU=1`` started by hand (README: Running on a cluster). The Nanny
restarts a worker that dies.

Why the quick end: a graceful close asks every idle worker to shut down and waits for its process
(about 4 s on the 2-core CPU machine, each worker holding torch); the organizer waited for it
inside the run's wall time. Once no job is pending the workers hold nothing, so ``stop`` turns the
Nannies' restart off and SIGKILLs their worker processes (a running evaluation's worker dies with
them: PR_SET_PDEATHSIG), then closes the cluster: 0.2 s there.

Why the early start (issue 35: the cluster's first job began 5 s after the serial run's): ``python
-m harness leaderboard|serve --cluster local`` starts the cluster on a thread before the parent
imports torch (``start_ahead_for_command``; Dask itself is imported first, on the main thread), its
workers and their blank workers beside those imports. The GPUs are then counted without torch
(/proc), a guess: ``start_local_cluster`` takes that cluster only where its workers are the ones
torch finds, else stops it and starts another.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from harness.judge.worker_link import blank_workers, host_share

RESOURCE = "GPU"  # one per Dask worker; on a CPU cluster it is the worker's one evaluation slot
ALLOWED_FAILURES = 1  # worker deaths a job survives: it is run once more, then reported lost
CPU_WORKERS_MAX = 8
Slots = dict[str, dict[str, str]]
"""Worker name -> the environment its process starts with."""


class ClusterError(Exception):
    """The cluster cannot run this leaderboard; the message is the one line the organizer sees."""


def local_gpu_indices() -> list[int]:
    """This host's GPUs of GPU 0's model (timings of two models never rank together)."""
    import torch

    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return [index for index, name in enumerate(names) if name == names[0]]


def _slot_env(visible: str, workers: int) -> dict[str, str]:
    """One worker's environment: its GPU ('': a CPU worker), and how many evaluations share the host."""
    return {**({"CUDA_VISIBLE_DEVICES": visible} if visible else {}), host_share.SHARE_ENV: str(workers)}


def _gpu_slots(visible: list[str], gpus: list[int]) -> Slots:
    """'gpuN' pinned to GPU N, for torch's indices ``gpus`` (of this process's CUDA_VISIBLE_DEVICES)."""
    return {f"gpu{index}": _slot_env(visible[index] if visible else str(index), len(gpus)) for index in gpus}


def _cpu_slots() -> Slots:
    cpus = min(os.cpu_count() or 1, CPU_WORKERS_MAX)
    return {f"cpu{index}": _slot_env("", cpus) for index in range(cpus)}


def _visible() -> list[str]:
    return [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]


def worker_slots(device: str | None) -> Slots:
    """Worker name -> the environment it starts with: 'gpuN' pinned to GPU N, or 'cpuN' per core; each
    told how many evaluations share the host (host_share: its thread pools take their share)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ClusterError("--device cuda, but no CUDA GPU is visible (use --device cpu for a dry run)")
    if device != "cpu" and torch.cuda.is_available():
        # torch's index i is the i-th entry of this process's CUDA_VISIBLE_DEVICES, when it has one
        return _gpu_slots(_visible(), local_gpu_indices())
    return _cpu_slots()


def guessed_slots(device: str | None, gpus: Path = host_share.NVIDIA_GPUS) -> Slots | None:
    """``worker_slots`` without torch, from the driver's /proc entries: None where it cannot tell
    (GPUs of several models, CUDA_VISIBLE_DEVICES naming GPUs by UUID)."""
    if device == "cpu":
        return _cpu_slots()
    try:
        models = {(entry / "information").read_text().partition("Model:")[2].split("\n")[0].strip()
                  for entry in gpus.iterdir()}
        count = sum(1 for _ in gpus.iterdir())
    except OSError:
        return _cpu_slots() if device is None else None
    visible = _visible()
    if len(models) != 1 or not all(v.isdigit() and int(v) < count for v in visible):
        return None
    return _gpu_slots(visible, list(range(len(visible) if visible else count)))


def _start(slots: Slots, device: str | None) -> tuple[Any, Any, float]:
    """The cluster (its workers started at once), a client of it with every worker set up
    (dask_worker_setup), and the seconds it took."""
    import dask
    from distributed import Client, Nanny, Scheduler, SpecCluster

    from harness.execution.dask_worker_setup import DASK_SET, set_up_workers

    started = time.perf_counter()
    workers = {
        name: {"cls": Nanny, "options": {"nthreads": 1, "resources": {RESOURCE: 1}, "env": env,
                                         "dashboard": False, "silence_logs": logging.ERROR}}
        for name, env in slots.items()
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard": False, "allowed_failures": ALLOWED_FAILURES}}
    # Each Nanny would set its worker's thread counts to 1 and glibc's trim threshold to 64 KiB, in this
    # process's own environment too (its pre-spawn-environ; dask_worker_setup says what they cost): the
    # workers size their pools to their share of the host (host_share) and keep glibc's defaults.
    with dask.config.set({f"distributed.nanny.pre-spawn-environ.{name}": None for name in DASK_SET}):
        cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR,
                              name="nvfp4-leaderboard")
    client = Client(cluster, set_as_default=False)
    set_up_workers(client, device)
    return cluster, client, time.perf_counter() - started


class _Ahead:
    """The cluster ``start_ahead`` is starting on a thread, for ``start_local_cluster`` to take."""

    def __init__(self, slots: Slots, device: str | None) -> None:
        self.slots = slots
        self.started: tuple[Any, Any, float] | None = None
        self.thread = threading.Thread(target=self._run, args=(device,), name="nvfp4-cluster-ahead", daemon=True)
        self.thread.start()
        atexit.register(self.discard)

    def _run(self, device: str | None) -> None:
        with contextlib.suppress(Exception):  # a failed guess costs nothing: the cluster starts again later
            self.started = _start(self.slots, device)

    def take(self, slots: Slots) -> tuple[Any, Any, float] | None:
        """The started cluster when its workers are ``slots`` (else stopped), None if there is none."""
        self.thread.join()
        started, self.started = self.started, None
        if started is not None and slots != self.slots:
            stop_local_cluster(started[0], started[1])
            return None
        return started

    def discard(self) -> None:
        """Stop a cluster nobody took (the command failed before it opened its executor)."""
        if self.thread.is_alive():
            self.thread.join(timeout=30)
        started, self.started = self.started, None
        if started is not None:
            stop_local_cluster(started[0], started[1])


_ahead: _Ahead | None = None


def start_ahead_for_command(argv: list[str]) -> None:
    """``leaderboard`` or ``serve`` with ``--cluster local``: start the cluster now, on a thread, with
    the workers guessed without torch (``guessed_slots``); ``start_local_cluster`` takes it."""
    global _ahead
    if not argv or argv[0] not in ("leaderboard", "serve") or {"-h", "--help"} & set(argv):
        return
    options = dict(blank_workers.option_values(argv[1:]))
    if options.get("--cluster") != "local":
        return
    device = options.get("--device") or (blank_workers.guess_device() if argv[0] == "leaderboard" else None)
    slots = guessed_slots(device)
    if not slots:
        return
    try:  # here, not on the thread: two threads importing one module graph can see it half made
        import harness.execution.dask_worker_setup  # noqa: F401  (dask, distributed)
    except ImportError:  # no cluster extra: the command says so itself
        return
    _ahead = _Ahead(slots, device)


def start_local_cluster(device: str | None) -> tuple[Any, Any, float]:
    """The cluster, a client of it (workers set up), and the seconds this call took to get them:
    the cluster started ahead when its workers are the right ones, else a new one."""
    global _ahead
    started = time.perf_counter()
    slots = worker_slots(device)
    ahead, _ahead = _ahead, None
    taken = ahead.take(slots) if ahead is not None else None
    if taken is not None:
        return taken[0], taken[1], time.perf_counter() - started
    return _start(slots, device)


def stop_local_cluster(cluster: Any, client: Any) -> None:
    """End the cluster at once: no restarts, every worker process killed, then the cluster closed."""
    for nanny in list(cluster.workers.values()):
        nanny.auto_restart = False
    try:
        pids = client.run(os.getpid, on_error="return") if client.status == "running" else {}
    except OSError:  # the scheduler is unreachable: the graceful close below does what it can
        pids = {}
    client.close()
    for pid in pids.values():
        if isinstance(pid, int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    cluster.close()
