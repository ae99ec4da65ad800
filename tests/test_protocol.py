"""The result channel: round trips, and malformed or hostile bytes rejected without harm."""

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from harness.contract import messages, protocol


@pytest.fixture
def pipe():
    """A result channel as the worker gets it (the parent reads, the worker writes)."""
    from harness.judge.worker_link.channel_sockets import channel

    read_fd, write_fd = channel(parent_sends=False)
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_round_trip_keeps_values_shape_and_dtype(pipe):
    read_fd, write_fd = pipe
    tensors = [
        torch.tensor([[1.5, float("nan")], [-0.0, 65504.0]], dtype=torch.float16),
        torch.arange(6, dtype=torch.float32).reshape(3, 2).t(),  # non-contiguous
        torch.empty((0, 4), dtype=torch.float16),
    ]
    protocol.send(write_fd, {"op": "output", "time_us": 1.25}, tensors)
    header, received = protocol.receive(read_fd)
    assert header["op"] == "output" and header["time_us"] == 1.25
    for sent, got in zip(tensors, received):
        assert got.dtype == sent.dtype and got.shape == sent.shape
        assert torch.equal(got.view(-1).view(torch.uint8) if got.numel() else got,
                           sent.contiguous().view(-1).view(torch.uint8) if sent.numel() else sent)


def test_unsupported_dtype_becomes_a_description_not_an_error(pipe):
    read_fd, write_fd = pipe
    protocol.send(write_fd, {"op": "output"}, [torch.zeros(2, dtype=torch.complex64)])
    _, received = protocol.receive(read_fd)
    assert received == ["tensor of unsupported dtype 'complex64'"]


@pytest.mark.parametrize(
    "payload",
    [
        b"check: pass\n" + b"x" * 64,  # a forged text line: its 'length' is absurd
        struct.pack("<I", 5) + b"notjs",
        struct.pack("<I", 2) + b"[]",
        struct.pack("<I", 2) + b"{}",
    ],
)
def test_garbage_is_a_protocol_error(pipe, payload):
    read_fd, write_fd = pipe
    os.write(write_fd, payload)
    os.close(write_fd)
    with pytest.raises((protocol.ProtocolError, EOFError)):
        protocol.receive(read_fd)


def test_size_mismatch_is_a_protocol_error(pipe):
    read_fd, write_fd = pipe
    header = b'{"op": "output", "tensors": [{"dtype": "float16", "shape": [4], "nbytes": 2}]}'
    os.write(write_fd, struct.pack("<I", len(header)) + header + b"\0\0")
    with pytest.raises(protocol.ProtocolError, match="cannot have 2 bytes"):
        protocol.receive(read_fd)


PEAK_AFTER_HUGE_HEADER = """
import os, resource, struct
from harness.contract import protocol
read_fd, write_fd = os.pipe()
header = b'{"op": "output", "tensors": [{"dtype": "uint8", "shape": [1073741824], "nbytes": 1073741824}]}'
os.write(write_fd, struct.pack("<I", len(header)) + header + b"abcd")
os.close(write_fd)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    protocol.receive(read_fd)
except EOFError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux's")
def test_a_header_that_names_a_huge_tensor_costs_only_what_was_sent():
    """A hostile worker announces 1 GiB and sends 4 bytes: the parent's peak memory must not grow
    by the 1 GiB (measured in a fresh process, whose peak is its own)."""
    done = subprocess.run([sys.executable, "-c", PEAK_AFTER_HUGE_HEADER], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], check=True)
    assert int(done.stdout) < 64 << 10, f"peak grew by {done.stdout.strip()} KiB"


def test_a_payload_larger_than_the_pipe_round_trips_into_a_writable_tensor(pipe):
    read_fd, write_fd = pipe
    big = torch.arange(3 << 19, dtype=torch.int32).to(torch.float16)  # 3 MiB: many reads
    sender = threading.Thread(target=protocol.send, args=(write_fd, {"op": "output"}, [big]))
    sender.start()
    _, received = protocol.receive(read_fd)
    sender.join()
    assert torch.equal(received[0], big)
    received[0][0] = 7  # the buffer is writable and owned by the tensor
    assert float(received[0][0]) == 7


@pytest.mark.parametrize("tensors", [
    None, "x", [None], [{"dtype": "uint8", "shape": [1], "nbytes": "1"}],
    [{"dtype": "uint8", "shape": [1], "nbytes": 1.5}],
    [{"dtype": "uint8", "shape": [1], "nbytes": True}], [{"dtype": ["uint8"], "shape": [1], "nbytes": 1}],
    [{"dtype": "uint8", "nbytes": 1}], [{"dtype": "uint8", "shape": "1", "nbytes": 1}],
    [{"dtype": "uint8", "shape": [1], "stride": None, "offset": 0, "nbytes": 1}],
    [{"dtype": "uint8", "shape": [1], "stride": [1], "offset": 2**64, "nbytes": 1}],
], ids=lambda tensors: str(tensors)[:40])
def test_malformed_tensor_entries_are_protocol_errors(pipe, tensors):
    """Whatever a hostile worker puts in a header's fields, the parent sees one ProtocolError."""
    read_fd, write_fd = pipe
    header = json.dumps({"op": "output", "tensors": tensors}).encode()
    os.write(write_fd, struct.pack("<I", len(header)) + header + b"\0")
    with pytest.raises(protocol.ProtocolError):
        protocol.receive(read_fd)


def test_closed_channel_is_eof(pipe):
    read_fd, write_fd = pipe
    os.close(write_fd)
    with pytest.raises(EOFError):
        protocol.receive(read_fd)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_the_channels_are_one_way_and_cannot_be_reopened():
    """Row x10's routes, refused by the kernel: a channel fd opened again through /proc (a pipe's read
    end so opened is its write end; a socket is never opened there), a write into the command channel
    from the worker's end, a read of the result channel from it."""
    import errno

    from harness.judge.worker_link.channel_sockets import channel

    commands_parent, commands_worker = channel(parent_sends=True)
    results_parent, results_worker = channel(parent_sends=False)
    try:
        for fd, flags in ((commands_worker, os.O_WRONLY), (results_worker, os.O_RDONLY)):
            with pytest.raises(OSError) as refused:
                os.close(os.open(f"/proc/self/fd/{fd}", flags))
            assert refused.value.errno == errno.ENXIO
        with pytest.raises(BrokenPipeError):
            os.write(commands_worker, b"x")
        assert os.read(results_worker, 1) == b""  # shut for the parent's writes: at its end at once
        os.write(commands_parent, b"request")
        os.write(results_worker, b"reply")
        assert os.read(commands_worker, 16) == b"request" and os.read(results_parent, 16) == b"reply"
    finally:
        for fd in (commands_parent, commands_worker, results_parent, results_worker):
            os.close(fd)


def test_a_descriptor_follows_its_message_and_a_missing_one_is_a_protocol_error():
    """The device snapshot's descriptor crosses the command channel (SCM_RIGHTS) after the Start that names it;
    the message is read to its end first, and the descriptor received is a working copy."""
    parent, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read_end, write_end = os.pipe()
    try:
        protocol.send_message(parent.fileno(), messages.Prepare(case={"m": 1, "seed": 2}))
        protocol.send_descriptor(parent.fileno(), write_end)
        assert isinstance(protocol.receive_message(worker.fileno(), messages.REQUESTS).message, messages.Prepare)
        received = protocol.receive_descriptor(worker.fileno())
        os.write(received, b"through")
        os.close(received)
        assert os.read(read_end, 16) == b"through"
        parent.send(b"x")  # a byte with no descriptor
        with pytest.raises(messages.ProtocolError):
            protocol.receive_descriptor(worker.fileno())
    finally:
        for end in (read_end, write_end):
            os.close(end)
        parent.close()
        worker.close()
