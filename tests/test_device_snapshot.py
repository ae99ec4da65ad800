"""The parent's device snapshot on the CPU: when it is made at all, and what a refusal by the driver
leaves behind (nothing). Its copies on a GPU run in scripts/gpu_check.sh (rows f01 and f04)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.contract import protocol
from harness.judge.worker_link import device_snapshot

GRANULARITY = 2 << 20
ROOT = Path(__file__).resolve().parents[1]


class RefusingDriver:
    """libcuda as the snapshot calls it, refusing ``refuse`` (a CUresult of 2) and recording the rest."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse
        self.calls: list[str] = []
        self.exported: int | None = None

    def __getattr__(self, name: str):
        def call(*args):
            self.calls.append(name)
            if name == self.refuse:
                return 2
            if name == "cuMemGetAllocationGranularity":
                args[0]._obj.value = GRANULARITY
            elif name == "cuMemCreate":
                args[0]._obj.value = 7
            elif name == "cuMemExportToShareableHandle":
                self.exported = os.open(os.devnull, os.O_RDONLY)
                args[0]._obj.value = self.exported
            elif name == "cuMemAddressReserve":
                args[0]._obj.value = 1 << 40
            return 0
        return call


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(device_snapshot.torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(device_snapshot.torch, "zeros", lambda *args, **kwargs: None)

    def use(driver: RefusingDriver) -> None:
        monkeypatch.setattr(device_snapshot, "driver", lambda: driver)
    return use


@pytest.mark.parametrize("refused", ["cuMemCreate", "cuMemExportToShareableHandle", "cuMemAddressReserve",
                                     "cuMemMap", "cuMemSetAccess"])
def test_a_refused_step_releases_what_was_made(fake_gpu, refused: str) -> None:
    driver = RefusingDriver(refused)
    fake_gpu(driver)
    with pytest.raises(RuntimeError, match="CUresult 2"):
        device_snapshot.DeviceSnapshot(torch.device("cuda", 0), 100 << 20)
    made = driver.calls[:driver.calls.index(refused)]
    released = driver.calls[driver.calls.index(refused) + 1:]
    assert ("cuMemRelease" in released) == ("cuMemCreate" in made)
    assert ("cuMemAddressFree" in released) == ("cuMemAddressReserve" in made)
    if driver.exported is not None:  # the descriptor meant for the worker is closed too
        with pytest.raises(OSError):
            os.fstat(driver.exported)


def test_a_parent_whose_driver_refuses_gives_no_snapshot(fake_gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gpu(RefusingDriver("cuMemCreate"))
    monkeypatch.setattr(device_snapshot.seal, "sealed_core_built", lambda: True)
    assert device_snapshot.for_worker("cuda:0", torch.device("cuda", 0), unsealed=False) is None


@pytest.mark.parametrize(("device", "check_on", "unsealed"), [
    ("cpu", torch.device("cpu"), False),  # a CPU run: the output file
    ("cuda:0", None, False),  # the check off the GPU
    ("cuda:0", torch.device("cpu"), False),
    ("cuda:0", torch.device("cuda", 0), True),  # unsealed (Nsight Compute): no core to map it
])
def test_no_snapshot_where_nothing_would_read_it(monkeypatch: pytest.MonkeyPatch, device: str,
                                                 check_on: torch.device | None, unsealed: bool) -> None:
    monkeypatch.setattr(device_snapshot.seal, "sealed_core_built", lambda: True)
    monkeypatch.setattr(device_snapshot, "DeviceSnapshot", lambda *args: pytest.fail("a snapshot was made"))
    assert device_snapshot.for_worker(device, check_on, unsealed) is None


def test_a_snapshot_is_made_handed_over_once_and_released(fake_gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = RefusingDriver("none")
    fake_gpu(driver)
    monkeypatch.setattr(device_snapshot.torch.cuda, "Stream", lambda device: None)
    snapshot = device_snapshot.DeviceSnapshot(torch.device("cuda", 0), 100 << 20 | 1)
    assert snapshot.nbytes == 102 << 20 and snapshot.base.value == 1 << 40  # rounded up to the granularity
    places: dict = {}
    settlers: list = []
    parent_end, worker_end = socket.socketpair()
    with parent_end, worker_end:
        snapshot.hand_over(parent_end.fileno(), places, settlers)
        received = protocol.receive_descriptor(worker_end.fileno())
    os.close(received)
    assert places == {device_snapshot.SNAPSHOT_KEY: snapshot.read} and settlers == [snapshot.settle]
    with pytest.raises(OSError):  # the parent's own copy of the descriptor is closed once sent
        os.fstat(driver.exported)
    with pytest.raises(RuntimeError, match="already handed over"):
        snapshot.hand_over(parent_end.fileno(), places, settlers)
    with pytest.raises(device_snapshot.ProtocolError, match="outside"):
        snapshot.read(snapshot.nbytes - 10, 11)
    snapshot.close()
    assert driver.calls[-3:] == ["cuMemUnmap", "cuMemAddressFree", "cuMemRelease"]
    snapshot.close()  # a second close releases nothing twice
    assert driver.calls.count("cuMemRelease") == 1


class CountingStream:
    """A CUDA stream standing in on the CPU: counts the host's waits for it."""

    def __init__(self) -> None:
        self.waits = 0
        self.cuda_stream = 0

    def synchronize(self) -> None:
        self.waits += 1


def test_a_messages_copies_are_waited_for_once_not_once_per_output(fake_gpu, monkeypatch: pytest.MonkeyPatch):
    """read queues each output's copy; settle (the reader, after the whole message) waits once for all of them,
    and not again until another copy is queued."""
    fake_gpu(RefusingDriver("none"))
    stream = CountingStream()
    held: list[str] = []  # the snapshot's stream entered (and not yet left) on this thread

    @contextlib.contextmanager
    def entered(s):
        held.append("stream")
        yield
        held.remove("stream")
    monkeypatch.setattr(device_snapshot.torch.cuda, "Stream", lambda device: stream)
    monkeypatch.setattr(device_snapshot.torch.cuda, "stream", entered)
    empty = torch.empty

    def allocate(n, dtype, device):
        assert held == ["stream"], "a copy allocated outside the snapshot's stream"
        return empty(n, dtype=dtype)
    monkeypatch.setattr(device_snapshot.torch, "empty", allocate)
    snapshot = device_snapshot.DeviceSnapshot(torch.device("cuda", 0), 4 << 20)
    copies = [snapshot.read(at, 100) for at in (0, 4096, 8192)]
    assert [c.numel() for c in copies] == [100, 100, 100] and stream.waits == 0
    assert held == ["stream"]  # entered once for the message's three outputs, not once each
    snapshot.settle()
    assert held == []
    snapshot.settle()
    assert stream.waits == 1
    snapshot.read(0, 0)  # an empty output queues no copy
    snapshot.settle()
    assert stream.waits == 1 and held == []
    snapshot.close()


WORKER_WITHOUT_A_GPU = r"""
import os, socket, sys
sys.path.insert(0, sys.argv[1])
from harness.contract import protocol
from harness.contract.messages import Start
from harness.worker import serve_loop
from harness.worker.failures import SubmissionError

def null_fds():
    return {fd for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == os.devnull}

parent_end, worker_end = socket.socketpair()
key_r, key_w = os.pipe()
worker = serve_loop.Worker(worker_end.fileno(), -1, key_r)
before = null_fds()
sent = os.open(os.devnull, os.O_RDONLY)
protocol.send_descriptor(parent_end.fileno(), sent)
start = Start(device="cpu", reference_module="problems.nvfp4_gemv.reference",
              task_py=os.path.join(sys.argv[1], "problems/nvfp4_gemv/task.py"), submission="unused.py",
              unsealed=True, snapshot_bytes=256 << 20)
try:
    worker.start(start)
except SubmissionError as error:
    print(error.kind.value, "|", error)
print("received descriptor left open:", null_fds() != before | {str(sent)})
"""


def test_a_worker_without_a_gpus_core_refuses_the_snapshot_and_closes_its_descriptor() -> None:
    run = subprocess.run([sys.executable, "-c", WORKER_WITHOUT_A_GPU, str(ROOT)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert lines[0] == "harness_fault | a device snapshot sent to a worker without a GPU's core"
    assert lines[1] == "received descriptor left open: False"
