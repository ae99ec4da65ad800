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
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from typing import Any

from harness.judge.worker_link import host_share

RESOURCE = "GPU"  # one per Dask worker; on a CPU cluster it is the worker's one evaluation slot
ALLOWED_FAILURES = 1  # worker deaths a job survives: it is run once more, then reported lost
CPU_WORKERS_MAX = 8


class ClusterError(Exception):
    """The cluster cannot run this leaderboard; the message is the one line the organizer sees."""


def local_gpu_indices() -> list[int]:
    """This host's GPUs of GPU 0's model (timings of two models never rank together)."""
    import torch

    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return [index for index, name in enumerate(names) if name == names[0]]


def worker_slots(device: str | None) -> dict[str, dict[str, str]]:
    """Worker name -> the environment it starts with: 'gpuN' pinned to GPU N, or 'cpuN' per core; each
    told how many evaluations share the host (host_share: its thread pools take their share)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ClusterError("--device cuda, but no CUDA GPU is visible (use --device cpu for a dry run)")
    if device != "cpu" and torch.cuda.is_available():
        # torch's index i is the i-th entry of this process's CUDA_VISIBLE_DEVICES, when it has one
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        gpus = local_gpu_indices()
        return {f"gpu{index}": {"CUDA_VISIBLE_DEVICES": visible[index] if visible else str(index),
                                host_share.SHARE_ENV: str(len(gpus))} for index in gpus}
    cpus = min(os.cpu_count() or 1, CPU_WORKERS_MAX)
    return {f"cpu{index}": {host_share.SHARE_ENV: str(cpus)} for index in range(cpus)}


def start_local_cluster(device: str | None) -> tuple[Any, float]:
    """The cluster (its workers started at once, not one after another) and the seconds it took."""
    from distributed import Nanny, Scheduler, SpecCluster

    started = time.perf_counter()
    workers = {
        name: {"cls": Nanny, "options": {"nthreads": 1, "resources": {RESOURCE: 1}, "env": env,
                                         "dashboard": False, "silence_logs": logging.ERROR}}
        for name, env in worker_slots(device).items()
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard": False, "allowed_failures": ALLOWED_FAILURES}}
    cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR, name="nvfp4-leaderboard")
    return cluster, time.perf_counter() - started


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
