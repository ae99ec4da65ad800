"""A joined scheduler restarting: the executor holds its queue until the new scheduler takes the
workers' plugin again, instead of failing the whole run (CI met the registration while the
scheduler was still down: ConnectionResetError out of ``register_plugin``).

A stand-in client (no cluster): tests/test_cluster_faults.py kills and restarts a real scheduler.
"""

from __future__ import annotations

import pytest

from harness.execution import dask_executor
from harness.execution.dask_executor import DaskExecutor
from harness.execution.eval_job import EvalJob


class StandInClient:
    """What DaskExecutor asks of a distributed.Client here: one worker, submissions recorded."""

    status = "running"

    def __init__(self) -> None:
        self.sent: list[EvalJob] = []

    def subscribe_topic(self, topic: str, handler: object) -> None:
        pass

    def scheduler_info(self, n_workers: int = -1) -> dict:
        return {"workers": {"tcp://w0": {"name": "w0"}}}

    def submit(self, function: object, job: EvalJob, **options: object) -> object:
        self.sent.append(job)
        return object()


def job(name: str) -> EvalJob:
    return EvalJob(key=name, problem="nvfp4_gemm", filename=name, source=b"")


@pytest.fixture
def setups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each registration of the workers' plugin; the first two meet a scheduler that is not back."""
    calls: list[str] = []

    def register(client: object, device: str | None) -> None:
        calls.append(str(device))
        if len(calls) <= 2:
            raise ConnectionResetError(104, "Connection reset by peer")  # an OSError, as CommClosedError is

    monkeypatch.setattr(dask_executor, "set_up_workers", register)
    return calls


def test_a_scheduler_not_back_yet_holds_the_queue_until_it_takes_the_plugin(setups: list[str]) -> None:
    client = StandInClient()
    executor = DaskExecutor(client, None, "cpu", "cpu", address="tcp://127.0.0.1:1")
    assert executor._after_scheduler_restart() is False  # no exception: the run goes on
    executor.submit(job("one.py"))  # the second registration fails too: nothing is sent
    assert client.sent == [] and len(setups) == 2
    with executor._lock:
        executor._dispatch()  # the next poll: the scheduler is back, then the job goes
    assert [sent.key for sent in client.sent] == ["one.py"] and len(setups) == 3
    executor.submit(job("two.py"))  # set up: no registration again
    assert len(setups) == 3


def test_a_local_cluster_restart_registers_no_plugin(setups: list[str]) -> None:
    """A local cluster's executor (no address) only subscribes again; its workers were set up at start."""
    executor = DaskExecutor(StandInClient(), None, "cpu", "cpu", address=None)
    assert executor._after_scheduler_restart() is True and setups == []
