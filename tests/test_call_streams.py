"""The compiled core's windows take CALL_STREAMS streams in turn by call index (harness/worker/csrc/gpu_window.h):
on an H200 a short kernel's event time moved with the stream it ran on, alike for every call on that stream, so a
worker that timed every call on one stream kept that stream's offset (docs/timing.md). The GPU side runs on the
device (scripts/gpu_check.sh); here, what the CPU can hold: the constant both sides share, the worker putting
torch on the core's stream of each call, and the parent's warm-up over every stream."""

import torch

from harness.contract.messages import CALL_STREAMS
from harness.judge.worker_link.worker_channel import WorkerSession
from harness.worker import _sealed, sealed_core


def test_the_core_and_the_contract_agree_on_the_stream_count():
    assert _sealed.CALL_STREAMS == CALL_STREAMS


def test_each_call_runs_with_torch_on_the_cores_stream_for_its_index(monkeypatch):
    """The core picks stream index % CALL_STREAMS for its window; the worker makes the same one torch's current
    stream before the call, so the submission's launches fall between the core's events."""
    timer = object.__new__(sealed_core.SealedTimer)
    timer._streams = [f"stream {i}" for i in range(CALL_STREAMS)]
    current = []
    monkeypatch.setattr(torch.cuda, "set_stream", current.append)
    for index in (0, 1, 7, 8, 13):
        timer.use_stream(index)
    assert current == ["stream 0", "stream 1", "stream 7", "stream 0", "stream 5"]
    assert timer.streams == CALL_STREAMS


def test_a_cpu_core_takes_no_streams(monkeypatch):
    timer = object.__new__(sealed_core.SealedTimer)
    timer._streams = []
    monkeypatch.setattr(torch.cuda, "set_stream", lambda stream: 1 / 0)  # never called without a GPU
    timer.use_stream(3)
    assert timer.streams == 0


def test_the_parent_warms_every_stream_and_believes_no_more_than_the_core_takes():
    """The warm-up runs a case on each stream (the allocator keeps a pool per stream) and on each placement; Ready
    comes after the submission's import, so a forged count cannot lengthen the warm-up past CALL_STREAMS."""
    session = object.__new__(WorkerSession)
    shape = "m=128 k=256 l=1"
    case = {"m": 128, "k": 256, "l": 1, "seed": 5}
    session.sealed, session._drawn, session._placements, session._streams = True, {shape}, {shape: 3}, CALL_STREAMS
    assert session.warm_calls(case) == CALL_STREAMS
    session._streams = 10**9
    assert session.warm_calls(case) == CALL_STREAMS
    session._streams, session._placements = 1, {shape: 5}
    assert session.warm_calls(case) == 5
    session._streams = 0
    assert session.warm_calls(case) == 5
