"""Where jobs run: the ``Executor`` interface, and jobs one after another in this process."""

from __future__ import annotations

import contextlib
import queue
import threading
from typing import Protocol

from harness.contract.results import RunResult
from harness.execution.eval_job import EvalJob, LineCallback, run_job
from harness.judge.worker_link import blank_workers


class Executor(Protocol):
    """Where jobs run. ``submit`` never blocks; ``completed`` returns finished jobs to one caller."""

    def submit(self, job: EvalJob) -> None: ...

    def slots(self) -> int:
        """Jobs that can run at once (a service hands out that many)."""
        ...

    def workers(self) -> list[str]:
        """Names a job's ``worker`` may pin it to: one per GPU of a cluster, none here."""
        ...

    def completed(self, timeout_s: float | None = None) -> list[tuple[EvalJob, RunResult]]:
        """Jobs finished since the last call; waits up to ``timeout_s`` for at least one."""
        ...

    def close(self) -> None: ...


class SerialExecutor:
    """Jobs one after another on a background thread of this process (no cluster).

    A job starts only once the caller has come back for the last one's result (its next
    ``completed`` call): the caller has then stored and reported it, so a plain log reads each
    file's verdict before the next file's 'started' line. ``close`` does not wait for a job still
    running (the organizer's Ctrl-C): the thread is a daemon, and the job's worker process dies
    with this process (PR_SET_PDEATHSIG).
    """

    def __init__(self, progress: LineCallback | None = None) -> None:
        self._progress = progress
        self._jobs: queue.Queue[EvalJob | None] = queue.Queue()
        self._done: queue.Queue[tuple[EvalJob, RunResult]] = queue.Queue()
        self._caller_ready = threading.Event()
        self._caller_ready.set()
        self._running: EvalJob | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="serial-executor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            self._running = job  # before the wait: close() must never join a thread about to run a job
            self._caller_ready.wait()
            if self._closing:
                return
            if self._progress:
                self._progress(f"{job.problem}/{job.filename}: started")
            result = run_job(job, progress=self._progress)
            self._running = None
            self._caller_ready.clear()
            self._done.put((job, result))

    def submit(self, job: EvalJob) -> None:
        self._jobs.put(job)

    def slots(self) -> int:
        return 1

    def workers(self) -> list[str]:
        return []

    def completed(self, timeout_s: float | None = None) -> list[tuple[EvalJob, RunResult]]:
        self._caller_ready.set()  # what it was given before is reported: the next job may start
        finished = []
        try:
            finished.append(self._done.get(timeout=timeout_s))
            while True:
                finished.append(self._done.get_nowait())
        except queue.Empty:
            pass
        return finished

    def close(self) -> None:
        """Drop the jobs not started; wait for the thread unless a job is running; kill the blank
        worker started for a next file that never came."""
        self._closing = True
        with contextlib.suppress(queue.Empty):
            while True:
                self._jobs.get_nowait()
        self._jobs.put(None)
        self._caller_ready.set()
        if self._running is None:
            self._thread.join()
            blank_workers.SHELF.discard()
