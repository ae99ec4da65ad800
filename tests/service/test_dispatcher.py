"""The dispatcher with a stand-in executor: which jobs get the secret, results written once, restarts."""

from __future__ import annotations

import queue
import time

import pytest

from harness.contract.results import RunResult, Status
from harness.execution.eval_job import EvalJob
from harness.service import jobs
from harness.service.db import ServiceDb
from harness.service.dispatcher import Dispatcher
from harness.service.users import add_user, authenticate

SECRET = 4242


class HeldExecutor:
    """Keeps submitted jobs until the test releases them, with a result it chooses."""

    def __init__(self) -> None:
        self.submitted: list[EvalJob] = []
        self.done: queue.Queue = queue.Queue()
        self.closed = False

    def submit(self, job: EvalJob) -> None:
        self.submitted.append(job)

    def release(self, job: EvalJob, status: Status = Status.PASSED) -> None:
        self.done.put((job, RunResult(problem=job.problem, submission_path="/tmp/nvfp4-job-x/" + job.filename,
                                      submission_sha256="", mode=job.mode, device={"type": "cpu", "name": "cpu"},
                                      harness_version="0.1.0", status=status)))

    def completed(self, timeout_s: float | None = None) -> list:
        try:
            return [self.done.get(timeout=timeout_s)]
        except queue.Empty:
            return []

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def db(tmp_path):
    db = ServiceDb.open(tmp_path / "service.db")
    yield db
    db.close()


def enqueue(db: ServiceDb, user_id: int, mode: str) -> int:
    with db.locked() as store:
        return jobs.enqueue(store.connection, user_id=user_id, problem="nvfp4_gemv", mode=mode, filename="k.py",
                            source=b"def custom_kernel(data):\n    return data\n")


def until(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_only_ranked_jobs_carry_the_secret_and_one_job_runs_at_a_time(db):
    user = authenticate(db.connection, add_user(db.connection, "ada"))
    ranked, test = enqueue(db, user.id, "leaderboard"), enqueue(db, user.id, "test")
    executor = HeldExecutor()
    dispatcher = Dispatcher(db, executor, device="cpu", secret_seed=SECRET)
    dispatcher.start()
    try:
        until(lambda: len(executor.submitted) == 1)
        time.sleep(0.3)
        assert len(executor.submitted) == 1  # parallel=1: the second waits in the queue
        executor.release(executor.submitted[0])
        until(lambda: len(executor.submitted) == 2)
        executor.release(executor.submitted[1])
        until(lambda: jobs.get(db.connection, test).status == "done")
    finally:
        dispatcher.stop()
    first, second = executor.submitted
    assert (first.key, first.secret_seed, second.key, second.secret_seed) == (str(ranked), SECRET, str(test), None)
    assert str(SECRET) not in repr(first)
    stored = jobs.get(db.connection, ranked)
    assert stored.result["submission_path"] == "k.py"  # not the executor's temporary folder
    [run] = db.store.runs("nvfp4_gemv")  # only the ranked-mode job joins the leaderboard, under the user's name
    assert (run.author, run.submission_path, stored.run_id) == ("ada", "ada/k.py", run.id)
    assert executor.closed


def test_a_duplicate_answer_is_dropped(db):
    user = authenticate(db.connection, add_user(db.connection, "ada"))
    job_id = enqueue(db, user.id, "test")
    executor = HeldExecutor()
    dispatcher = Dispatcher(db, executor, device="cpu", secret_seed=None)
    dispatcher.start()
    try:
        until(lambda: executor.submitted)
        executor.release(executor.submitted[0])
        executor.release(executor.submitted[0], Status.FAILED)
        until(lambda: executor.done.empty())
        time.sleep(0.2)
    finally:
        dispatcher.stop()
    assert jobs.get(db.connection, job_id).result["status"] == "passed"


def test_start_requeues_running_jobs_and_stores_a_finished_ranked_run_it_missed(db):
    user = authenticate(db.connection, add_user(db.connection, "ada"))
    running, finished = enqueue(db, user.id, "test"), enqueue(db, user.id, "leaderboard")
    with db.locked() as store:
        jobs.take_next(store.connection), jobs.take_next(store.connection)
        result = RunResult(problem="nvfp4_gemv", submission_path="k.py", submission_sha256="", mode="leaderboard",
                           device={"type": "cpu", "name": "cpu"}, harness_version="0.1.0", status=Status.PASSED)
        jobs.finish(store.connection, finished, result.to_json())  # then the service died before adding the run
    executor = HeldExecutor()
    dispatcher = Dispatcher(db, executor, device="cpu", secret_seed=None)
    dispatcher.start()
    try:
        until(lambda: executor.submitted)
    finally:
        dispatcher.stop()
    assert [job.key for job in executor.submitted] == [str(running)]
    assert jobs.get(db.connection, running).attempts == 2
    [run] = db.store.runs("nvfp4_gemv")
    assert jobs.get(db.connection, finished).run_id == run.id


def test_a_run_stored_but_not_linked_before_a_stop_is_linked_not_stored_again(db):
    user = authenticate(db.connection, add_user(db.connection, "ada"))
    job_id = enqueue(db, user.id, "leaderboard")
    with db.locked() as store:
        job = jobs.take_next(store.connection)
        result = RunResult(problem="nvfp4_gemv", submission_path="k.py", submission_sha256="", mode="leaderboard",
                           device={"type": "cpu", "name": "cpu"}, harness_version="0.1.0", status=Status.PASSED,
                           started_at="2026-11-24T03:00:00+00:00")
        jobs.finish(store.connection, job_id, result.to_json())
        Dispatcher._add_run(store, job, result)  # stored and linked ...
        store.connection.execute("UPDATE submissions SET run_id = NULL WHERE id = ?", (job_id,))  # ... link lost
        store.connection.commit()
    dispatcher = Dispatcher(db, HeldExecutor(), device="cpu", secret_seed=None)
    dispatcher.start()
    dispatcher.stop()
    [run] = db.store.runs("nvfp4_gemv")
    assert jobs.get(db.connection, job_id).run_id == run.id


class RefusingExecutor(HeldExecutor):
    """An executor whose cluster is gone: every submit raises."""

    def submit(self, job: EvalJob) -> None:
        raise OSError("the scheduler is gone")


def test_a_job_the_executor_refuses_goes_back_to_the_queue(db):
    user = authenticate(db.connection, add_user(db.connection, "ada"))
    job_id = enqueue(db, user.id, "test")
    dispatcher = Dispatcher(db, RefusingExecutor(), device="cpu", secret_seed=None)
    dispatcher.start()
    time.sleep(1.2)  # at least two tries
    dispatcher.stop()
    job = jobs.get(db.connection, job_id)
    assert (job.status, job.attempts) == ("queued", 0)
