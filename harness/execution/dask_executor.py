"""Evaluations on a Dask distributed cluster: one job per GPU at a time, anywhere on the network.

Why Dask: one organizer run can hold thousands of files; a scheduler spreads them over every GPU
of every host, notices a worker that dies and gives its job to another one. Each Dask worker owns
one GPU (``CUDA_VISIBLE_DEVICES`` pinned before it starts) and offers one ``GPU`` resource; every
job asks for it, so two timings never share a GPU. The job itself is ``run_job``, the same call
as in the serial path: the submission runs in the evaluator's own isolated worker process.

A job whose Dask worker dies is run once more (the scheduler's ``allowed_failures`` is 1), then
comes back as a ``HarnessFailure`` naming the lost workers. A job lost with the scheduler (it
restarted, or the connection to it broke) is sent again, up to ``LOST_RESUBMITS`` times; a client
the scheduler dropped reconnects. Results go back to the one client that writes the store, which
stores each job's result under a unique key, so nothing is stored twice.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import threading
import time
import uuid
from concurrent.futures import CancelledError
from typing import Any

from harness.execution.eval_job import EvalJob, LineCallback, RunResult, harness_failure, run_job
from harness.execution.local_cluster import (
    ALLOWED_FAILURES,
    RESOURCE,
    ClusterError,
    start_local_cluster,
    stop_local_cluster,
)
from harness.execution.serial_executor import Executor, SerialExecutor

PROGRESS_TOPIC = "nvfp4-progress"
CONNECT_TIMEOUT_S = 20
LOST_RESUBMITS = 3  # times a job lost with the scheduler is sent again before it is reported lost
DISPATCH_POLL_S = 1.0  # while jobs wait in the queue, how often a newly joined worker is looked for
_sequence = itertools.count()  # ties in the queue keep submission order


# -- what runs on the Dask workers ----------------------------------------------------------
def worker_device_name(device: str | None) -> str:
    """This worker's device as the store names it: the GPU model, or 'cpu'."""
    import torch

    if device == "cpu" or (device is None and not torch.cuda.is_available()):
        return "cpu"
    if not torch.cuda.is_available():
        return "no GPU visible"
    from harness.sol.breakdown import current_device_name

    return current_device_name()


def evaluate_on_worker(job: EvalJob) -> RunResult:
    """One job on the Dask worker running this task; the evaluator's lines go to the client."""
    from distributed import get_worker

    worker = get_worker()
    label = f"{worker.name} {job.problem}/{job.filename}"

    def forward(line: str) -> None:
        worker.log_event(PROGRESS_TOPIC, f"{label}: {line}")

    forward("started")
    started = time.perf_counter()
    result = run_job(job, progress=forward)
    result.device["worker"] = str(worker.name)  # which worker (so which GPU) ran it, for the per-GPU check
    forward(f"finished in {time.perf_counter() - started:.1f} s")
    return result


# -- the executor -----------------------------------------------------------------------------
class DaskExecutor:
    """The Executor on a Dask client: ``submit`` queues a job, ``completed`` hands back results.

    Longest first: the client keeps the queue (longest expected duration first) and sends a job
    only when a worker is free, because the scheduler would place resource-bound tasks on
    workers as they arrive, whatever their priority. A job naming a worker (a GPU check's copy)
    goes there while that worker lives, elsewhere once it is gone.
    """

    def __init__(self, client: Any, worker_names: list[str] | None, device: str, device_name: str,
                 progress: LineCallback | None = None, cluster: Any = None, address: str | None = None) -> None:
        self.client = client
        self.worker_names = worker_names  # None: every worker (they all rank together)
        self.device = device
        self.device_name = device_name
        self.address = address  # a joined scheduler's address, to reconnect to; None for a local cluster
        self._cluster = cluster  # closed with the executor when this executor started it
        self._progress = progress
        self._waiting: list[tuple[float, int, EvalJob]] = []  # a heap, longest expected first
        self._pending: dict[Any, EvalJob] = {}
        self._lost: collections.Counter[str] = collections.Counter()  # job key -> times lost with the scheduler
        self._lock = threading.Lock()
        self._submitted = threading.Event()
        self._setup_due = False  # a restarted scheduler still lacks the subscription and the workers' plugin
        self._subscribe()

    def _subscribe(self) -> None:
        if self._progress:
            progress = self._progress
            self.client.subscribe_topic(PROGRESS_TOPIC, lambda event: progress(event[1]))

    def submit(self, job: EvalJob) -> None:
        """Queue the job; a job never seen before counts as the longest (it may well be)."""
        expected = job.expected_s if job.expected_s is not None else float("inf")
        with self._lock:
            heapq.heappush(self._waiting, (-expected, next(_sequence), job))
            self._dispatch()
        self._submitted.set()

    def workers(self) -> list[str]:
        """The names of the workers this executor sends jobs to (a GPU check places a copy on each)."""
        infos = self.client.scheduler_info(n_workers=-1)["workers"].values()
        return sorted(str(w.get("name")) for w in infos
                      if self.worker_names is None or str(w.get("name")) in self.worker_names)

    def slots(self) -> int:
        """Jobs that can run at once: one per worker (at least one, so a job waits for a worker)."""
        return max(1, len(self.workers()))

    def _dispatch(self) -> None:
        """Send queued jobs, longest first, while a worker is free (called with the lock held); none
        while a restarted scheduler cannot yet be given what it lost (``_after_scheduler_restart``)."""
        if not self._waiting:
            return
        self._reconnect_if_dropped()
        if self._setup_due and not self._after_scheduler_restart():
            return
        for _ in range(min(len(self._waiting), self.slots() - len(self._pending))):
            _, _, job = heapq.heappop(self._waiting)
            future = self.client.submit(
                evaluate_on_worker, job, key=f"evaluate-{job.filename}-{uuid.uuid4().hex[:12]}", pure=False,
                resources={RESOURCE: 1}, workers=[job.worker] if job.worker else self.worker_names,
                allow_other_workers=job.worker is not None)
            self._pending[future] = job

    def _reconnect_if_dropped(self) -> None:
        """A client that gave up on a restarted scheduler is replaced by a new connection."""
        if self.client.status not in ("closing", "closed"):
            return
        if self.address is None:
            raise ClusterError("the local Dask cluster's scheduler is gone")
        self.client = _connect(self.address)
        self._after_scheduler_restart()

    def completed(self, timeout_s: float | None = None) -> list[tuple[EvalJob, RunResult]]:
        """Jobs finished since the last call, waiting up to ``timeout_s`` for one. While jobs wait
        in the queue, a worker that joins (a restarted one) gets one within ``DISPATCH_POLL_S``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            step = left if not self._waiting else min(DISPATCH_POLL_S, DISPATCH_POLL_S if left is None else left)
            finished = self._completed_within(step)
            if finished or (left is not None and left <= step):
                return finished
            with self._lock:
                self._dispatch()

    def _completed_within(self, timeout_s: float | None) -> list[tuple[EvalJob, RunResult]]:
        from distributed import wait

        with self._lock:
            pending = list(self._pending)
            if not pending:
                self._submitted.clear()
        if not pending:
            self._submitted.wait(timeout_s)
            return []
        try:
            with self.client.as_current():  # wait() finds its client there (this one is not the default)
                done = wait(pending, timeout=timeout_s, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            return []
        except CancelledError:  # lost with the scheduler (or the connection to it): sent again below
            done = {future for future in pending if future.status == "cancelled"}
        finished = []
        with self._lock:
            if any(future.status == "cancelled" for future in done):
                self._after_scheduler_restart()
            for future in done:
                job = self._pending.pop(future)
                lost = future.status == "cancelled"
                if lost and self._lost[job.key] < LOST_RESUBMITS:
                    self._lost[job.key] += 1
                    heapq.heappush(self._waiting, (-float("inf"), next(_sequence), job))  # first in line again
                    if self._progress:
                        self._progress(f"{job.problem}/{job.filename}: its Dask task was lost with the scheduler; "
                                       f"sent again ({self._lost[job.key]} of {LOST_RESUBMITS})")
                else:
                    finished.append((job, self._result(job, future, lost)))
                future.release()
            self._dispatch()
        return finished

    def _after_scheduler_restart(self) -> bool:
        """Give a restarted scheduler the progress subscription and the plugin its new workers need (it
        knows neither). False while it is not back to take them (the connection refused or reset: the
        futures were cancelled the moment it died): ``_dispatch`` tries again before it sends anything,
        each poll, so no job reaches a worker set up by nobody (CI once failed here: the plugin's
        registration met the scheduler still restarting)."""
        try:
            self._subscribe()
            if self.address is not None:
                set_up_workers(self.client, self.device)
        except OSError:  # distributed's CommClosedError is one
            self._setup_due = True
            return False
        self._setup_due = False
        return True

    def _result(self, job: EvalJob, future: Any, lost: bool) -> RunResult:
        """The job's RunResult, or a HarnessFailure saying why there is none."""
        from distributed import KilledWorker

        if lost:
            return harness_failure(job, f"its Dask task was lost {self._lost[job.key] + 1} times (the scheduler "
                                        "restarted or was unreachable, or the client lost it)")
        if future.status == "finished":
            return future.result()
        error = future.exception()
        if isinstance(error, KilledWorker):
            return harness_failure(job, f"its Dask worker died {ALLOWED_FAILURES + 1} times "
                                        f"(last on {error.last_worker.name or error.last_worker.address})")
        return harness_failure(job, f"the Dask task failed: {type(error).__name__}: {error}")

    def close(self) -> None:
        """Cancel what is still queued, disconnect, and stop the cluster if this executor started it
        (at once: its workers are killed, a running evaluation with them)."""
        with self._lock:
            pending = list(self._pending)
            self._pending.clear()
            self._waiting.clear()
        if self._cluster is not None:
            stop_local_cluster(self._cluster, self.client)
            return
        if pending and self.client.status == "running":
            self.client.cancel(pending)
        self.client.close()


def choose_workers(models: dict[str, str], progress: LineCallback | None) -> tuple[list[str] | None, str]:
    """The names of the workers with the most common device model (ties: the first model in
    alphabetical order), None when every worker has it; say which workers are left out."""
    counts = collections.Counter(models.values())
    model = max(sorted(counts), key=counts.__getitem__)
    if len(counts) == 1:
        return None, model
    chosen = sorted(name for name, found in models.items() if found == model)
    if progress:
        others = ", ".join(f"{count}x {name}" for name, count in sorted(counts.items()) if name != model)
        progress(f"note: running on the {len(chosen)} worker(s) with {model} only; left out: {others} "
                 "(timings from different models never rank together)")
    return chosen, model


def _connect(address: str) -> Any:
    from distributed import Client

    if not address.startswith(("tcp://", "tls://")):
        raise ClusterError(f"--cluster {address}: expected 'local' or a scheduler address such as tcp://HOST:8786")
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as error:
        raise ClusterError(f"--cluster {address}: no Dask scheduler answered ({type(error).__name__}); start it "
                           "with 'dask scheduler' (README: Running on a cluster)") from None


def open_dask_executor(address: str, device: str | None = None, progress: LineCallback | None = None) -> DaskExecutor:
    """Start ('local') or join ('tcp://HOST:PORT') a cluster and check its workers can rank together."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ClusterError("--cluster needs Dask distributed: pip install -e '.[cluster]'") from None
    if address == "local":
        cluster, client, start_s = start_local_cluster(device)
    else:
        cluster, client, start_s = None, _connect(address), 0.0
    try:
        if cluster is None:  # a local cluster's workers were set up as it started
            set_up_workers(client, device)
        workers = client.scheduler_info(n_workers=-1)["workers"]
        if not workers:
            raise ClusterError(f"--cluster {address}: no Dask workers are connected; start one per GPU "
                               "(README: Running on a cluster)")
        lacking = sorted(info.get("name", a) for a, info in workers.items() if RESOURCE not in info["resources"])
        if lacking:
            raise ClusterError(f"--cluster {address}: worker(s) {', '.join(map(str, lacking))} offer no "
                               f"{RESOURCE} resource; start each with --resources {RESOURCE}=1")
        found = client.run(worker_device_name, device)
        models = {str(workers[a].get("name", a)): model for a, model in found.items()}
        if "no GPU visible" in models.values() or (device == "cuda" and "cpu" in models.values()):
            raise ClusterError(f"--cluster {address}: some workers see no GPU ({sorted(models.values())})")
        if address != "local":
            client.run_on_scheduler(_limit_failures, ALLOWED_FAILURES)
        chosen, model = choose_workers(models, progress)
    except BaseException:
        client.close()
        if cluster is not None:
            cluster.close()
        raise
    kind = "cpu" if model == "cpu" else "cuda"
    if progress:
        count = len(chosen) if chosen is not None else len(models)
        started = f" (started in {start_s:.1f} s)" if cluster is not None else ""
        progress(f"cluster {address}: {count} worker(s) with {model}, one job per worker at a time{started}")
    return DaskExecutor(client, chosen, kind, model, progress, cluster, None if cluster is not None else address)


def set_up_workers(client: Any, device: str | None) -> None:
    """dask_worker_setup's, imported on use (it imports distributed, which this module does only on use)."""
    from harness.execution.dask_worker_setup import set_up_workers as register  # imports distributed

    register(client, device)


def _limit_failures(count: int, dask_scheduler: Any = None) -> None:
    """Runs on a joined scheduler: a job survives ``count`` worker deaths, whatever it was started with."""
    dask_scheduler.allowed_failures = count


def open_executor(cluster: str | None = None, progress: LineCallback | None = None,
                  device: str | None = None) -> Executor:
    """The executor for ``--cluster``: none runs jobs serially in this process; 'local' starts a
    Dask cluster on this host, 'tcp://HOST:PORT' joins a running scheduler.

    ``device`` ('cpu' or 'cuda', None: what the workers have) picks the local cluster's kind.
    Raises ``ClusterError`` (one line) when the cluster cannot be used.
    """
    if cluster is None:
        return SerialExecutor(progress)
    return open_dask_executor(cluster, device=device, progress=progress)
