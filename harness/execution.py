"""The one execution path: a submission's source in, a ``RunResult`` out.

The leaderboard, the Dask cluster and the submission service all evaluate through ``run_job``;
an ``Executor`` decides only *where* jobs run (in this process one after another, or on a Dask
cluster) and hands finished results back to the one caller that writes the store.

A job carries the file's bytes, not a path: a Dask worker on another host has no access to the
organizer's checkout.
"""

from __future__ import annotations

import queue
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.results import RunResult

Progress = Callable[[str], None]


@dataclass(frozen=True)
class EvalJob:
    """One evaluation to run somewhere."""

    key: str  # unique per job (a store id, a path): how results are matched to jobs
    problem: str
    filename: str  # the file's own name (kept: error messages and the report show it)
    source: bytes
    mode: str = "leaderboard"
    device: str | None = None  # None: cuda when the executing host has a GPU, else cpu
    secret_seed: int | None = field(default=None, repr=False)  # never in a log line
    expected_s: float | None = None  # a stored duration of this file, for longest-first ordering


def run_job(job: EvalJob, visible_devices: str | None = None, progress: Progress | None = None) -> RunResult:
    """Evaluate one job in this process: its source goes to a private folder, then the evaluator."""
    from harness.evaluate import evaluate_submission

    with tempfile.TemporaryDirectory(prefix="nvfp4-job-") as folder:
        path = Path(folder) / Path(job.filename).name
        path.write_bytes(job.source)
        return evaluate_submission(job.problem, path, mode=job.mode, device=job.device,
                                   secret_seed=job.secret_seed, visible_devices=visible_devices,
                                   progress=progress)


class Executor(Protocol):
    """Where jobs run. ``submit`` never blocks; ``completed`` returns finished jobs to one caller."""

    def submit(self, job: EvalJob) -> None: ...

    def completed(self, timeout_s: float | None = None) -> list[tuple[EvalJob, RunResult]]:
        """Jobs finished since the last call; waits up to ``timeout_s`` for at least one."""
        ...

    def close(self) -> None: ...


class SerialExecutor:
    """Jobs one after another on a background thread of this process (no cluster)."""

    def __init__(self, progress: Progress | None = None) -> None:
        self._progress = progress
        self._jobs: queue.Queue[EvalJob | None] = queue.Queue()
        self._done: queue.Queue[tuple[EvalJob, RunResult]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="serial-executor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            self._done.put((job, run_job(job, progress=self._progress)))

    def submit(self, job: EvalJob) -> None:
        self._jobs.put(job)

    def completed(self, timeout_s: float | None = None) -> list[tuple[EvalJob, RunResult]]:
        finished = []
        try:
            finished.append(self._done.get(timeout=timeout_s))
            while True:
                finished.append(self._done.get_nowait())
        except queue.Empty:
            pass
        return finished

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()


def open_executor(cluster: str | None = None, progress: Progress | None = None) -> Executor:
    """The executor for ``--cluster``: none runs jobs serially in this process."""
    if cluster is None:
        return SerialExecutor(progress)
    raise ValueError(f"--cluster {cluster}: no cluster support in this build")
