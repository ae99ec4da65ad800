"""The parent's copies of a call's outputs for the check (judge/worker_link/check_copies.py). The GPU's
order, with torch's stream calls recorded on the CPU: copies and the MAC check on the copies' own stream,
the parent's own work queued beside them, the check's stream waiting for them after, and each copy's memory
kept from reuse until the check ran."""

from __future__ import annotations

import contextlib

import torch

from harness.judge.worker_link import check_copies


def test_on_a_gpu_the_mac_is_checked_on_the_copies_inside_their_stream_and_the_check_waits(monkeypatch):
    events: list[str] = []

    class Stream:
        def __init__(self, name: str) -> None:
            self.name = name

        def wait_stream(self, other: Stream) -> None:
            events.append(f"{self.name} waits for {other.name}")

    @contextlib.contextmanager
    def on(stream: Stream):
        events.append(f"enter {stream.name}")
        yield
        events.append(f"leave {stream.name}")

    monkeypatch.setattr(torch.cuda, "Stream", lambda device: Stream("copies"))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: Stream("check"))
    monkeypatch.setattr(torch.cuda, "stream", on)
    monkeypatch.setattr(check_copies, "copy_storage_to", lambda t, device: (events.append("copy"), t.clone())[1])
    monkeypatch.setattr(torch.Tensor, "record_stream", lambda self, stream: events.append(f"record on {stream.name}"),
                        raising=False)
    verified: list[list] = []
    received = [torch.arange(3.0), "custom_kernel returned a str"]
    out = check_copies.CheckCopies().deliver(received, torch.device("cuda", 0),
                                             lambda copies: (events.append("verify"), verified.append(copies)),
                                             lambda: events.append("the parent's own work"))
    assert events == ["enter copies", "copy", "verify", "leave copies", "the parent's own work",
                      "check waits for copies", "record on check"]
    assert verified == [out] and out[1] == received[1] and torch.equal(out[0], received[0])
    assert out[0] is not received[0]  # the check reads the copy the MAC covered, not what arrived


def test_on_the_host_the_mac_is_checked_on_the_bytes_received_and_they_are_what_the_check_reads():
    verified: list[list] = []
    received = [torch.arange(3.0)]
    out = check_copies.CheckCopies().deliver(received, None, verified.append)
    assert verified == [received] and out[0] is received[0]
