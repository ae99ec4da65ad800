"""The one writer of results: hands queued jobs to the executor and stores what comes back.

Why a single thread: the store has one writer, so a result is written exactly once, in the
order the executor finishes jobs; the web handlers only read and enqueue. ``parallel`` bounds
the jobs handed to the executor at once (None: the executor's slots, one per cluster worker), so a
job is 'running' only once it has been handed over and 'queued' jobs keep an honest position.
A ranked result joins the leaderboard's runs under the key ``service/<job id>``: the store keeps
keys unique, so a restart between storing and linking can never store it twice.
"""

from __future__ import annotations

import hashlib
import logging
import threading

from harness.contract.results import RunResult
from harness.execution.eval_job import EvalJob, is_harness_error
from harness.execution.serial_executor import Executor
from harness.judge.verdict.modes import MODES
from harness.leaderboard.store import Store
from harness.service import jobs
from harness.service.db import ServiceDb

log = logging.getLogger("harness.service")
POLL_S = 0.5


class Dispatcher:
    def __init__(self, db: ServiceDb, executor: Executor, *, device: str | None, secret_seed: int | None,
                 parallel: int | None = 1) -> None:
        self._db, self._executor, self._device, self._parallel = db, executor, device, parallel
        self._secret_seed = secret_seed  # only ever copied into ranked-mode EvalJobs
        self._in_flight = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dispatcher", daemon=True)

    def start(self) -> None:
        """Re-queue what a stopped service left running, finish interrupted bookkeeping, then run."""
        with self._db.locked() as store:
            requeued = jobs.requeue_running(store.connection)
            for job in jobs.unranked_leaderboard_jobs(store.connection):
                result = RunResult.from_json(job.result or {})
                stored = jobs.stored_run(store.connection, job, hashlib.sha256(job.source).hexdigest(),
                                         result.started_at)
                if stored is None:
                    self._add_run(store, job, result)
                else:  # stored, then stopped before the link: link it, never store it twice
                    jobs.link_run(store.connection, job.id, stored)
        if requeued:
            log.info("re-queued %d job(s) a previous run of the service left running", requeued)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop handing out jobs; a job still running is re-queued on the next start."""
        self._stop.set()
        self._thread.join(timeout_s)
        closer = threading.Thread(target=self._executor.close, name="executor-close", daemon=True)
        closer.start()
        closer.join(timeout_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._hand_out()
                for job, result in self._executor.completed(timeout_s=POLL_S):
                    self._in_flight -= 1
                    try:
                        self._record(int(job.key), result)
                    except Exception:  # this job stays 'running' (re-queued on the next start); the rest go on
                        log.exception("dispatcher: storing job %s failed", job.key)
            except Exception:  # the one writer must outlive a failed write; the job stays in the store
                log.exception("dispatcher: a step failed; retrying in %.1f s", POLL_S)
                self._stop.wait(POLL_S)

    def _hand_out(self) -> None:
        while self._in_flight < (self._parallel or self._executor.slots()):
            with self._db.locked() as store:
                job = jobs.take_next(store.connection)
            if job is None:
                return
            secret = self._secret_seed if MODES[job.mode].ranked else None
            try:
                self._executor.submit(EvalJob(key=str(job.id), problem=job.problem, filename=job.filename,
                                              source=job.source, mode=job.mode, device=self._device,
                                              secret_seed=secret, cache_owner=f"user\0{job.user_name}"))
            except Exception:  # the executor is gone (a Dask scheduler lost): the job waits in the queue
                with self._db.locked() as store:
                    jobs.release(store.connection, job.id)
                raise
            self._in_flight += 1
            log.info("job %d (%s, %s mode, user %s) started, attempt %d", job.id, job.problem, job.mode,
                     job.user_name, job.attempts)

    def _record(self, job_id: int, result: RunResult) -> None:
        with self._db.locked() as store:
            job = jobs.get(store.connection, job_id)
            if job is None:
                return
            result.submission_path = job.filename  # not the executor's private temporary path
            if not jobs.finish(store.connection, job_id, result.to_json()):
                log.warning("job %d answered twice; the second answer is dropped", job_id)
                return
            if MODES[job.mode].ranked:
                self._add_run(store, job, result)
        log.info("job %d done: %s", job_id, result.status.value)

    @staticmethod
    def _add_run(store: Store, job: jobs.Job, result: RunResult) -> None:
        """A ranked-mode result joins the leaderboard under the user's name (never the file's claim)."""
        run_id = store.add(result, problem=job.problem, submission_path=jobs.board_path(job),
                           sha256=hashlib.sha256(job.source).hexdigest(), author=job.user_name,
                           device_name=str(result.device.get("name", "?")),
                           harness_error=is_harness_error(result), run_key=f"service/{job.id}")
        jobs.link_run(store.connection, job.id, run_id)
