"""A call's outputs as the parent's check receives them (judge/worker_link/worker_channel.py: WorkerSession.call)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.contract import protocol
from harness.contract.messages import WindowClosed
from harness.contract.results import Status
from harness.contract.task_spec import load_task
from harness.judge.worker_link.worker_channel import WorkerFailure, WorkerSession


def test_a_call_hands_the_check_copies_of_its_sealed_outputs_on_the_check_device():
    """Where the check runs on a GPU the session copies each output there while the MAC is checked on
    the host bytes (torch's meta device stands in for the GPU on a CPU machine)."""
    task = load_task("nvfp4_gemv")
    case = {**task.tests[0], "seed": 7}
    with WorkerSession(task, Path("submissions/nvfp4_gemv/torch_reference.py").resolve(), "cpu") as session:
        session.start()
        on_host = session.call(case, 0.0, "a test", 30.0)
        session.check_on = torch.device("meta")
        on_check_device = session.call(case, 0.0, "a test", 30.0)
    assert on_host.output.device.type == "cpu" and on_check_device.output.device.type == "meta"
    assert (on_check_device.output.shape, on_check_device.output.dtype) == (on_host.output.shape, on_host.output.dtype)


def _session_with_window_signal(monkeypatch, index_offset: int = 0) -> tuple[WorkerSession, list[str]]:
    """A CPU session whose worker seems to say, right after each call is sent, that the call's window is over
    (a GPU's core does: messages.WindowClosed); ``index_offset``: a message for another call than the one sent.
    Returns the session (to use as a context manager) and the order of what happened."""
    task = load_task("nvfp4_gemv")
    session = WorkerSession(task, Path("submissions/nvfp4_gemv/torch_reference.py").resolve(), "cpu")
    events: list[str] = []
    send, expect = session._send_call, session._expect

    def send_and_signal(*args, **kwargs):
        sent = send(*args, **kwargs)
        session.worker.messages.put(protocol.Received(WindowClosed(index=sent.index + index_offset), [], []))
        return sent

    def logged_expect(kind, *args, **kwargs):
        reply, received = expect(kind, *args, **kwargs)
        events.append(type(reply).__name__)
        return reply, received

    monkeypatch.setattr(session, "_send_call", send_and_signal)
    monkeypatch.setattr(session, "_expect", logged_expect)
    return session, events


def test_the_parents_work_for_the_check_starts_when_the_window_is_over(monkeypatch):
    session, events = _session_with_window_signal(monkeypatch)
    case = {**session.task.tests[0], "seed": 7}
    with session:
        session.start()
        events.clear()
        session.call(case, 0.0, "a test", 30.0, answered=lambda: events.append("answered"), answer_early=True)
        assert events == ["WindowClosed", "answered", "Output"]
        events.clear()  # a call whose answer must wait for the reply (a Prepare in it) waits
        session.call(case, 0.0, "a test", 30.0, answered=lambda: events.append("answered"))
        assert events == ["WindowClosed", "Output", "answered"]


def test_a_window_closed_for_another_call_is_refused(monkeypatch):
    session, _ = _session_with_window_signal(monkeypatch, index_offset=1)
    case = {**session.task.tests[0], "seed": 7}
    with session:
        session.start()
        with pytest.raises(WorkerFailure, match="a window_closed message for call 1 during call 0") as failure:
            session.call(case, 0.0, "a test", 30.0, answer_early=True)
    assert failure.value.status == Status.REJECTED


def test_a_failure_of_the_parents_own_work_ends_the_worker_with_the_call(monkeypatch):
    """The parent's draw failing while the worker still finishes its call: the failure goes up and the
    worker, its reply still on the way, is ended (no later request could trust what it sends next)."""
    session, events = _session_with_window_signal(monkeypatch)
    case = {**session.task.tests[0], "seed": 7}

    def failing() -> None:
        raise RuntimeError("the parent's draw failed")

    with session:
        session.start()
        events.clear()
        with pytest.raises(RuntimeError, match="the parent's draw failed"):
            session.call(case, 0.0, "a test", 30.0, answered=failing, answer_early=True)
        assert events == ["WindowClosed"]
        session.worker.process.wait(timeout=30)
        assert not session.alive()
