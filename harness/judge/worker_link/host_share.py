"""An evaluation's share of the host's CPU cores, and the thread pools sized to it (parent and worker).

Why: with one evaluation per GPU, several run side by side on one host, and each process sized its
thread pools as if it owned the host (torch's intra-op threads in the parent and in the worker,
8 threads reading outputs in the parent and 8 hashing them in a CPU worker's compiled core; on a GPU
both sides hash on the GPU since 2026-11-26). Two evaluations
on a two-GPU host read about 11% slower each than one alone (docs/results.md run 13); a process
that shares the host takes its share, not all of it.

The share is the CPUs this process may run on divided by the evaluations that run side by side on
the host: ``NVFP4_HOST_SHARE`` when set (``--cluster local`` sets it to its worker count; set it on
a ``dask worker`` started by hand), else the host's GPU count (one evaluation per GPU), else 1.
An ``OMP_NUM_THREADS`` the organizer set is kept, for the worker as for the parent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SHARE_ENV = "NVFP4_HOST_SHARE"
"""How many evaluations run side by side on this host (a positive integer)."""
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""What the worker's libraries (torch, its BLAS) and its compiled core's digest read for their thread count."""
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")
"""One entry per GPU of the host, whatever CUDA_VISIBLE_DEVICES hides (Linux with NVIDIA's driver)."""


class ShareError(ValueError):
    """A share setting that is not a positive integer; the message names it and the fix."""


def evaluations_on_host(environ: Mapping[str, str] = os.environ, gpus: Path = NVIDIA_GPUS) -> int:
    """How many evaluations share this host: $NVFP4_HOST_SHARE, else the host's GPUs, else 1."""
    raw = environ.get(SHARE_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ShareError(f"{SHARE_ENV}={raw!r} is not a positive integer: set it to how many evaluations "
                             "run side by side on this host (one per GPU), or unset it")
        return int(raw)
    try:
        return max(1, sum(1 for _ in gpus.iterdir()))
    except OSError:  # no NVIDIA driver here: a CPU host, one evaluation unless told otherwise
        return 1


def host_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or taskset narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cpu_share(cpus: int | None = None, sharing: int | None = None) -> int:
    """Threads one evaluation's process may keep busy: its share of the CPUs, at least 1."""
    cpus = host_cpus() if cpus is None else cpus
    sharing = evaluations_on_host() if sharing is None else sharing
    return max(1, cpus // max(1, sharing))


def thread_env(environ: Mapping[str, str], share: int | None = None) -> dict[str, str]:
    """The thread-count variables a worker starts with: the organizer's where set, else the share."""
    threads = str(cpu_share() if share is None else share)
    return {name: environ.get(name) or threads for name in THREAD_ENV}


def size_torch_threads(share: int | None = None) -> int:
    """This process's torch intra-op threads to its share (an organizer's OMP_NUM_THREADS wins)."""
    import torch

    threads = int(os.environ["OMP_NUM_THREADS"]) if os.environ.get("OMP_NUM_THREADS", "").isdigit() else \
        (cpu_share() if share is None else share)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(max(1, threads))
    return threads
