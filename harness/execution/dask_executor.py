"""Evaluations on a Dask distributed cluster: one job per GPU at a time, anywhere on the network.

Why Dask: one organizer run can hold thousands of files; a scheduler spreads them over every GPU
of every host, notices a worker that dies and gives its job to another one. Each Dask worker owns
one GPU (``CUDA_VISIBLE_DEVICES`` pinned before it starts) and offers one ``GPU`` resource; every
job asks for it, so two timings never share a GPU. The job itself is ``run_job``, the same call
as in the serial path: the submission runs in the evaluator's own isolated worker process.

A job whose Dask worker dies is run once more (the scheduler's ``allowed_failures`` is 1), then
comes back as a ``HarnessFailure`` naming the lost workers. Results go back to the one client
that writes the store, so nothing is stored twice.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import os
import threading
import uuid
from typing import Any

from harness.execution.eval_job import EvalJob, LineCallback, RunResult, harness_failure, run_job
from harness.execution.serial_executor import Executor, SerialExecutor

RESOURCE = "GPU"  # one per Dask worker; on a CPU cluster it is the worker's one evaluation slot
ALLOWED_FAILURES = 1  # worker deaths a job survives: it is run once more, then reported lost
PROGRESS_TOPIC = "nvfp4-progress"
CPU_WORKERS_MAX = 8
CONNECT_TIMEOUT_S = 20
_sequence = itertools.count()  # ties in the queue keep submission order


class ClusterError(Exception):
    """The cluster cannot run this leaderboard; the message is the one line the organizer sees."""


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
    return run_job(job, progress=forward)


# -- the local cluster ------------------------------------------------------------------------
def local_gpu_indices() -> list[int]:
    """This host's GPUs of GPU 0's model (timings of two models never rank together)."""
    import torch

    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return [index for index, name in enumerate(names) if name == names[0]]


def start_local_cluster(device: str | None) -> Any:
    """One Nanny-managed worker process per GPU (``CUDA_VISIBLE_DEVICES`` pinned), or, for the
    CPU, one per core up to ``CPU_WORKERS_MAX``. A dead worker is restarted by its Nanny."""
    import torch
    from distributed import Nanny, Scheduler, SpecCluster

    if device == "cuda" and not torch.cuda.is_available():
        raise ClusterError("--device cuda, but no CUDA GPU is visible (use --device cpu for a dry run)")
    on_gpu = device != "cpu" and torch.cuda.is_available()
    if on_gpu:
        # torch's index i is the i-th entry of this process's CUDA_VISIBLE_DEVICES, when it has one
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        slots = {f"gpu{index}": {"CUDA_VISIBLE_DEVICES": visible[index] if visible else str(index)}
                 for index in local_gpu_indices()}
    else:
        slots = {f"cpu{index}": {} for index in range(min(os.cpu_count() or 1, CPU_WORKERS_MAX))}
    workers = {
        name: {"cls": Nanny, "options": {"nthreads": 1, "resources": {RESOURCE: 1}, "env": env,
                                         "dashboard": False, "silence_logs": logging.ERROR}}
        for name, env in slots.items()
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard": False, "allowed_failures": ALLOWED_FAILURES}}
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR, name="nvfp4-leaderboard")


# -- the executor -----------------------------------------------------------------------------
class DaskExecutor:
    """The Executor on a Dask client: ``submit`` queues a job, ``completed`` hands back results.

    Longest first: the client keeps the queue (longest expected duration first) and sends a job
    only when a worker is free, because the scheduler would place resource-bound tasks on
    workers as they arrive, whatever their priority.
    """

    def __init__(self, client: Any, worker_names: list[str] | None, device: str, device_name: str,
                 progress: LineCallback | None = None, cluster: Any = None) -> None:
        self.client = client
        self.worker_names = worker_names  # None: every worker (they all rank together)
        self.device = device
        self.device_name = device_name
        self._cluster = cluster  # closed with the executor when this executor started it
        self._waiting: list[tuple[float, int, EvalJob]] = []  # a heap, longest expected first
        self._pending: dict[Any, EvalJob] = {}
        self._lock = threading.Lock()
        self._submitted = threading.Event()
        if progress:
            client.subscribe_topic(PROGRESS_TOPIC, lambda event: progress(event[1]))

    def submit(self, job: EvalJob) -> None:
        """Queue the job; a job never seen before counts as the longest (it may well be)."""
        expected = job.expected_s if job.expected_s is not None else float("inf")
        with self._lock:
            heapq.heappush(self._waiting, (-expected, next(_sequence), job))
            self._dispatch()
        self._submitted.set()

    def _free_slots(self) -> int:
        workers = self.client.scheduler_info(n_workers=-1)["workers"].values()
        usable = [w for w in workers if self.worker_names is None or str(w.get("name")) in self.worker_names]
        return max(1, len(usable)) - len(self._pending)

    def _dispatch(self) -> None:
        """Send queued jobs, longest first, while a worker is free (called with the lock held)."""
        for _ in range(min(len(self._waiting), self._free_slots())):
            _, _, job = heapq.heappop(self._waiting)
            future = self.client.submit(
                evaluate_on_worker, job, key=f"evaluate-{job.filename}-{uuid.uuid4().hex[:12]}", pure=False,
                resources={RESOURCE: 1}, workers=self.worker_names, allow_other_workers=False)
            self._pending[future] = job

    def completed(self, timeout_s: float | None = None) -> list[tuple[EvalJob, RunResult]]:
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
        finished = []
        with self._lock:
            for future in done:
                job = self._pending.pop(future)
                finished.append((job, self._result(job, future)))
                future.release()
            self._dispatch()
        return finished

    @staticmethod
    def _result(job: EvalJob, future: Any) -> RunResult:
        """The job's RunResult, or a HarnessFailure saying why there is none."""
        from distributed import KilledWorker

        if future.status == "finished":
            return future.result()
        if future.status == "cancelled":
            return harness_failure(job, "the Dask task was cancelled (the scheduler or the client lost it)")
        error = future.exception()
        if isinstance(error, KilledWorker):
            return harness_failure(job, f"its Dask worker died {ALLOWED_FAILURES + 1} times "
                                        f"(last on {error.last_worker.name or error.last_worker.address})")
        return harness_failure(job, f"the Dask task failed: {type(error).__name__}: {error}")

    def close(self) -> None:
        """Cancel what is still queued, disconnect, and stop the cluster if this executor started it."""
        with self._lock:
            pending = list(self._pending)
            self._pending.clear()
            self._waiting.clear()
        if pending:
            self.client.cancel(pending)
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


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
    cluster = start_local_cluster(device) if address == "local" else None
    if cluster is not None:
        from distributed import Client

        client = Client(cluster, set_as_default=False)
    else:
        client = _connect(address)
    try:
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
        progress(f"cluster {address}: {count} worker(s) with {model}, one job per worker at a time")
    return DaskExecutor(client, chosen, kind, model, progress, cluster)


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
