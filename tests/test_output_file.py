"""Outputs through the parent's output file (issue 33): they round-trip, and nothing the worker does to
the file passes for an output (harness.judge.worker_link.output_reader, harness.contract.output_file).

The core takes one init per process, so the checks that need it run in one fresh interpreter per
SHA-256 backend (FILE_CHECK), whose findings the tests read.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.contract import messages, output_file, protocol
from harness.judge.worker_link import output_reader, worker_spawn

REPO = Path(__file__).resolve().parent.parent

FILE_CHECK = r'''
import json, os, threading, types
import torch
from harness.contract import messages, output_file, protocol
from harness.judge.worker_link import output_reader, seal, worker_spawn
from harness.worker import _sealed, sealed_core

key, read_fd = worker_spawn.new_key_pipe()
timer = sealed_core.SealedTimer(read_fd, torch.device("cpu"))
fd = worker_spawn.new_output_file()
worker_fd = os.dup(fd)  # the worker's own descriptor of the parent's file
timer.map_outputs(worker_fd)
during = []


def kernel(data):
    for action in during:
        action()
    return [data * 2, data[:3] + 1]


assert timer.bind(lambda _: types.SimpleNamespace(custom_kernel=kernel), "in-test")
calls = iter(range(1, 10**6))
found = {"backend": _sealed.sha256_backend()}


def answer(data):
    index = next(calls)
    return index, timer.time_call(data, index, 5, 0.0)


def received(reply, tamper_parts=None, fetch_fd=fd):
    _, time_us, host_us, unfinished, exposed, structure, views, mac, _, clock = reply
    parts = [protocol.storage_part(str(d), s, st, o, p) for d, s, st, o, p in views]
    if tamper_parts:
        tamper_parts(parts)
    read_end, write_end = os.pipe()
    output = messages.Output(time_us=time_us, host_us=host_us, structure=structure, unfinished=unfinished,
                             exposed=exposed, mac=mac, event_us=clock[0], clock_us=clock[1], clock_gap_us=clock[2],
                             clock_allowance_us=clock[3])
    sender = threading.Thread(target=protocol.send_message, args=(write_end, output), kwargs={"parts": parts})
    sender.start()
    try:
        return protocol.receive_message(read_end, messages.REPLIES,
                                        {output_file.FILE_KEY: lambda at, n: output_reader.read(fetch_fd, at, n)})
    finally:
        sender.join()
        os.close(write_end)
        os.close(read_end)


def verdict(index, reply, **how):
    """'sealed' (and the tensors), or the exception that rejected it."""
    try:
        got = received(reply, **how)
        seal.verify_call(key, index, 5, timer.overhead_us, got.message, got.entries, got.tensors)
    except (seal.SealBroken, messages.ProtocolError) as error:
        return type(error).__name__, None
    return "sealed", got


big = torch.arange(3 * (1 << 20) // 4 + 5, dtype=torch.float32)  # 3 MiB + 20 B: the last chunk partial
index, reply = answer(big)
result, got = verdict(index, reply)
found["big"] = [result, [sorted(e) for e in got.entries], torch.equal(got.tensors[0], big * 2),
                torch.equal(got.tensors[1], big[:3] + 1)]
huge = torch.zeros((65 << 20) // 4, dtype=torch.float32)  # past the core's first 64 MiB mapping: mapped again
huge[-1] = 3.0
index, reply = answer(huge)
result, got = verdict(index, reply)
found["grown"] = [result, torch.equal(got.tensors[0], huge * 2)]
del got, huge
small = torch.arange(8, dtype=torch.float32)
index, reply = answer(small)
result, got = verdict(index, reply)
found["small"] = [result, [sorted(e) for e in got.entries], torch.equal(got.tensors[0], small * 2)]

# Written by the submission while its call runs: the core's copy after the MAC overwrites it.
during.append(lambda: os.pwrite(worker_fd, bytes(4096), 0))
index, reply = answer(big)
during.clear()
result, got = verdict(index, reply)
found["written_before_the_copy"] = [result, torch.equal(got.tensors[0], big * 2)]

# Written after the core's digest and copy, before the parent reads: one byte of the third chunk.
index, reply = answer(big)
os.pwrite(worker_fd, bytes([os.pread(fd, 1, (2 << 20) + 7)[0] ^ 1]), (2 << 20) + 7)
found["written_after_the_digest"] = verdict(index, reply)[0]

# A stale file: the last call's bytes put back over this call's (same shapes, other values).
stale = os.pread(fd, big.numel() * 4, 0)
index, reply = answer(big + 1)
os.pwrite(worker_fd, stale, 0)
found["stale"] = verdict(index, reply)[0]

# A wrong length: the entry claims 4 bytes fewer, or the bytes lie 4 bytes further on.
def shorter(parts):
    parts[0][0]["nbytes"] -= 4
def moved(parts):
    parts[0][0][output_file.FILE_KEY] += 4
for name, tamper in (("shorter", shorter), ("moved", moved)):
    index, reply = answer(big)
    found[name] = verdict(index, reply, tamper_parts=tamper)[0]

# A file that ends early (one without the parent's seals, cut short): the read says so.
short = os.memfd_create("short")
os.write(short, os.pread(fd, 1 << 20, 0))
index, reply = answer(big)
found["file_ends_early"] = verdict(index, reply, fetch_fd=short)[0]

# The parent's seals: the worker can neither shrink nor grow the file.
refused = []
for size in (0, output_file.FILE_BYTES + 4096):
    try:
        os.ftruncate(worker_fd, size)
        refused.append(False)
    except PermissionError:
        refused.append(True)
found["resize_refused"] = refused
print(json.dumps(found))
'''


def _file_check(portable: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("NVFP4_SHA256_PORTABLE", None)
    if portable:
        env["NVFP4_SHA256_PORTABLE"] = "1"
    run = subprocess.run([sys.executable, "-c", FILE_CHECK], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


@pytest.fixture(scope="module", params=[False, True], ids=["own-sha256", "portable-sha256"])
def found(request):
    if worker_spawn.new_output_file() is None:
        pytest.skip("no memfd on this system: outputs use the pipe")
    return _file_check(request.param)


def test_the_portable_backend_is_the_one_in_use_when_asked(found, request):
    portable = request.node.callspec.params["found"]
    assert found["backend"] == "portable" if portable else found["backend"] in ("sha-ni", "portable")


def test_a_large_output_of_several_chunks_round_trips_through_the_file_and_verifies(found):
    result, entries, first_equal, second_equal = found["big"]
    assert result == "sealed" and first_equal and second_equal
    assert all(output_file.FILE_KEY in keys for keys in entries)  # nothing of either crossed the pipe


def test_an_output_larger_than_the_cores_mapping_maps_the_file_again(found):
    assert found["grown"] == ["sealed", True]


def test_a_small_output_still_crosses_the_pipe(found):
    result, entries, equal = found["small"]
    assert result == "sealed" and equal and not any(output_file.FILE_KEY in keys for keys in entries)


def test_the_submission_writing_the_file_during_its_call_changes_nothing(found):
    assert found["written_before_the_copy"] == ["sealed", True]


@pytest.mark.parametrize("tamper", ["written_after_the_digest", "stale", "shorter", "moved"])
def test_a_file_changed_or_misread_after_the_core_signed_is_rejected(found, tamper):
    assert found[tamper] in ("SealBroken", "ProtocolError")


def test_a_file_that_ends_early_is_a_protocol_error(found):
    assert found["file_ends_early"] == "ProtocolError"


def test_the_worker_can_neither_shrink_nor_grow_the_file(found):
    assert found["resize_refused"] == [True, True]


def test_the_rule_is_one_threshold():
    assert not output_file.through_file(output_file.FILE_MIN_BYTES - 1)
    assert output_file.through_file(output_file.FILE_MIN_BYTES)


def _send_entry(entry: dict) -> messages.ProtocolError | list:
    read_end, write_end = os.pipe()
    output = messages.Output(time_us=1.0, host_us=1.0, structure="tensor", unfinished=False)
    protocol.send_message(write_end, output, parts=[(entry, b"")])
    os.close(write_end)
    try:
        return protocol.receive_message(read_end, messages.REPLIES).tensors
    except messages.ProtocolError as error:
        return error
    finally:
        os.close(read_end)


@pytest.mark.parametrize("at", [0, -1, "0"])
def test_an_entry_in_an_output_file_the_reader_was_not_given_is_a_protocol_error(at):
    entry, _ = protocol.storage_part("float32", (4,), (1,), 0, ("file", 0, 16))
    entry[output_file.FILE_KEY] = at
    assert isinstance(_send_entry(entry), messages.ProtocolError)


@pytest.mark.parametrize("place", ["file", "snapshot"])
def test_an_entry_in_a_place_the_reader_was_not_given_or_in_two_is_a_protocol_error(place):
    """The device snapshot is a place like the file: an entry there with no reader for it, or one that
    names both places, is refused before any byte is read."""
    entry, _ = protocol.storage_part("float32", (4,), (1,), 0, (place, 0, 16))
    assert isinstance(_send_entry(entry), messages.ProtocolError)
    entry[output_file.FILE_KEY] = entry[output_file.SNAPSHOT_KEY] = 0
    assert isinstance(_send_entry(entry), messages.ProtocolError)


def test_an_entry_in_the_device_snapshot_is_read_by_the_snapshots_reader():
    """The parent's snapshot reader gets the entry's place and size; what it returns is the tensor's storage."""
    entry, _ = protocol.storage_part("float32", (2, 2), (2, 1), 0, ("snapshot", 512, 16))
    read_end, write_end = os.pipe()
    output = messages.Output(time_us=1.0, host_us=1.0, structure="tensor", unfinished=False)
    protocol.send_message(write_end, output, parts=[(entry, b"")])
    os.close(write_end)
    asked = []

    def reader(at: int, nbytes: int) -> torch.Tensor:
        asked.append((at, nbytes))
        return torch.arange(4, dtype=torch.float32).view(torch.uint8)

    try:
        tensors = protocol.receive_message(read_end, messages.REPLIES, {output_file.SNAPSHOT_KEY: reader}).tensors
    finally:
        os.close(read_end)
    assert asked == [(512, 16)] and torch.equal(tensors[0], torch.arange(4, dtype=torch.float32).view(2, 2))


def test_a_read_fills_the_parents_own_memory_from_any_offset():
    fd = worker_spawn.new_output_file()
    if fd is None:
        pytest.skip("no memfd on this system: outputs use the pipe")
    data = os.urandom(3 * output_reader.PIECE_BYTES + 11)
    os.pwrite(fd, data, 5)
    payload = output_reader.read(fd, 5, len(data))
    os.pwrite(fd, bytes(len(data)), 5)  # the file changes afterwards; the copy does not
    os.close(fd)
    assert payload.numpy().tobytes() == data and payload.dtype == torch.uint8
