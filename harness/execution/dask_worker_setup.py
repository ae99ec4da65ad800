"""What every Dask worker does once, as it joins: the environment Dask set undone, a blank worker started.

Why (issue 35: each job took 20-22 s on a two-GPU cluster against 16 s serially on the same host):

- Dask's Nanny starts every worker process with OMP_NUM_THREADS, MKL_NUM_THREADS and
  OPENBLAS_NUM_THREADS at 1 and MALLOC_TRIM_THRESHOLD_ at 65536 (its
  ``distributed.nanny.pre-spawn-environ``), and every evaluation worker inherited them.
  ``host_share`` keeps a thread count the organizer set and could not tell Dask's from one: the
  evaluation's reference and output check ran on one thread in the Dask worker, and so did its
  worker's compiled digest, where the serial run uses the evaluation's share of the host. The trim
  threshold turns glibc's growing mmap threshold off: every host buffer over 128 KiB is a fresh
  mmap, its pages faulted in again on each use (a 14 MB torch tensor made and filled: 15.4 ms
  against 0.7 ms, this CPU machine). A variable the Nanny's own environment lacks came from Dask,
  not the organizer: it is removed here (the evaluation workers start without it), and for the
  malloc setting this process already runs with, its thresholds are set to glibc's dynamic limits.
  ``--cluster local`` starts its workers without them in the first place (local_cluster).
- The first job on each worker started its evaluation worker cold (5.2 s on the H200s): a blank
  one is started now, while the client is still checking the workers, and every job keeps one
  ahead after it (``blank_workers.keep_one_ahead``, as ``run_job`` does).
- The evaluator's modules (torch, the judge) are imported now, on a thread, not in the first job.

``WorkerSetup`` is registered by the client on every worker, present and future (a worker the
Nanny restarts runs it again), for a local cluster and a joined one alike. A worker started by hand
can run it as it starts, before any client connects (``dask worker --preload
harness.execution.dask_worker_setup``: ``dask_setup``), so its first job finds all of it done. Imported only where
Dask is installed (it imports distributed).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from harness.judge.worker_link import blank_workers, host_share
from harness.judge.worker_link.worker_spawn import WorkerSpec

PLUGIN_NAME = "nvfp4-worker-setup"


DASK_SET = (*host_share.THREAD_ENV, "MALLOC_TRIM_THRESHOLD_")
"""The variables of the Nanny's pre-spawn-environ undone here (the rest, PYTHONHASHSEED, changes no timing)."""
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's upper bound for its growing mmap threshold on 64-bit hosts
TRIM_THRESHOLD_BYTES = 2 * MMAP_THRESHOLD_BYTES  # and its trim threshold as it grows (twice the mmap one)


def dask_set_variables(environ: Mapping[str, str], nanny_environ: Mapping[str, str] | None,
                       dask_values: Mapping[str, Any]) -> list[str]:
    """The variables of ``DASK_SET`` in ``environ`` that Dask's Nanny set, not the organizer: equal to
    Dask's pre-spawn value and absent from the Nanny's own environment (None: no Nanny, so none)."""
    if nanny_environ is None:
        return []
    return [name for name in DASK_SET
            if name in dask_values and environ.get(name) == str(dask_values[name]) and name not in nanny_environ]


def process_environ(pid: int) -> dict[str, str] | None:
    """A process's environment as it started (Linux /proc), None where it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {name.decode(errors="replace"): value.decode(errors="replace") for name, value in pairs}


def undo_dask_environment() -> list[str]:
    """Remove from this process's environment what the Nanny (its parent) put there; where that held
    the trim threshold this process's malloc started with, set glibc's dynamic limits instead."""
    import dask

    dask_values = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    removed = dask_set_variables(os.environ, process_environ(os.getppid()), dask_values)
    for name in removed:
        del os.environ[name]
    if "MALLOC_TRIM_THRESHOLD_" in removed and sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    return removed


def _import_evaluator() -> None:
    import harness.judge.run  # noqa: F401  (torch and the judge: what run_job imports first)


def prepare(device: str | None, busy: bool) -> None:
    """This worker process, once: Dask's environment undone, a blank worker started for ``device`` (None:
    the device this host would run), the evaluator's imports begun. ``busy``: a job already runs here,
    so the blank worker makes no CUDA context before its Start (it would touch the GPU mid-timing)."""
    undo_dask_environment()
    device = device or blank_workers.guess_device()
    blank_workers.keep_one_ahead()
    # On this (the worker's event loop) thread, which lives as long as the worker: the blank worker
    # dies with the thread that started it (PR_SET_PDEATHSIG), so never on a short-lived one.
    blank_workers.SHELF.put(WorkerSpec(device), warm=device == "cuda" and not busy)
    threading.Thread(target=_import_evaluator, name="nvfp4-imports", daemon=True).start()


class WorkerSetup(WorkerPlugin):
    """``prepare`` on each worker as it joins the client's cluster."""

    name = PLUGIN_NAME

    def __init__(self, device: str | None) -> None:
        self.device = device

    def setup(self, worker: Any) -> None:
        prepare(self.device, busy=bool(worker.state.executing_count))


def dask_setup(worker: Any) -> None:
    """Dask's preload hook (``dask worker --preload harness.execution.dask_worker_setup``): ``prepare``
    as the worker starts, for the device this host would run (a client's later setup is a no-op)."""
    prepare(None, busy=False)
    import harness.judge.run  # noqa: F401  (torch and the judge now, before the worker takes jobs)


def set_up_workers(client: Any, device: str | None) -> None:
    """Every worker of the client's scheduler, present and future, runs ``prepare`` as it joins (again
    on the present ones after a scheduler's restart: it is idempotent)."""
    client.register_plugin(WorkerSetup(device), name=PLUGIN_NAME)
