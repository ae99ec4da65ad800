"""Sealed results: the compiled core's MAC and digest as the parent checks them (harness.judge.worker_link.seal).

The core runs here in its CPU mode (wall clock), in this test process: one init and one bind per
process, so one module-scoped fixture holds it.
"""

import dataclasses
import gc
import hashlib
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
import torch

from harness.contract import leaf_hash, messages, protocol
from harness.judge.worker_link import output_leaves, seal, worker_spawn
from harness.worker import _sealed, sealed_core, timers

REPO = Path(__file__).resolve().parent.parent
ON_RETURN = []  # called by the fixture's kernel just before it returns


@pytest.fixture(scope="module")
def core():
    key, read_fd = worker_spawn.new_key_pipe()
    timer = sealed_core.SealedTimer(read_fd, torch.device("cpu"))
    outputs = {}

    def kernel(data):
        out = data.t() * 2  # a non-contiguous view: the core sends storage plus view
        outputs["last"] = out
        result = [out, data[:1]]
        for call in ON_RETURN:
            call()
        return result

    assert timer.bind(lambda _: types.SimpleNamespace(custom_kernel=kernel), "in-test")
    return key, timer


def _received(answer):
    """What the parent gets: the Output record, its tensor entries and tensors, through the real wire format."""
    _, time_us, host_us, unfinished, exposed, structure, views, mac, _, clock = answer
    parts = [(protocol.storage_entry(str(d), s, st, o, p), p) for d, s, st, o, p in views]
    read_fd, write_fd = os.pipe()
    event_us, clock_us, gap_us, allowance_us = clock
    output = messages.Output(time_us=time_us, host_us=host_us, structure=structure, unfinished=unfinished,
                             exposed=exposed, mac=mac, event_us=event_us, clock_us=clock_us, clock_gap_us=gap_us,
                             clock_allowance_us=allowance_us)
    sender = threading.Thread(target=protocol.send_message, args=(write_fd, output), kwargs={"parts": parts})
    sender.start()  # outputs larger than the pipe's buffer are read while they are written
    received = protocol.receive_message(read_fd, messages.REPLIES)
    sender.join()
    os.close(write_fd)
    os.close(read_fd)
    return received.message, received.entries, received.tensors


BACKEND_CHECK = """
import hashlib, hmac, os, sys
from harness.worker import _sealed
message = os.urandom(3 << 20) + bytes(63)
cases = ((b"k" * 32, b"call"), (b"x" * 100, b""), (bytes(5), b"m" * 1000), (b"k" * 32, message))
ok = all(_sealed.hmac_sha256(k, m) == hmac.new(k, m, hashlib.sha256).digest() for k, m in cases)
print(_sealed.sha256_backend(), ok)
"""


@pytest.mark.parametrize("portable", [False, True])
def test_c_hmac_matches_python_with_either_sha256(portable):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    if portable:
        env["NVFP4_SHA256_PORTABLE"] = "1"
    run = subprocess.run([sys.executable, "-c", BACKEND_CHECK], capture_output=True, text=True, env=env, timeout=60)
    backend, ok = run.stdout.split()
    assert ok == "True", run.stderr
    assert backend == "portable" if portable else backend in ("sha-ni", "portable")


SEALING_CHECK = """
import ctypes, sys, torch
from harness.judge.worker_link import output_leaves, seal, worker_spawn
from harness.worker import sealed_core
_, read_fd = worker_spawn.new_key_pipe()
timer = sealed_core.SealedTimer(read_fd, torch.device("cpu"))
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
core = sys.modules["harness.worker._sealed"].__file__
refused = []
for line in open("/proc/self/maps"):
    fields = line.split()
    if fields[-1] == core and "w" not in fields[1]:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        refused.append(libc.mprotect(start, end - start, 7) != 0)  # read, write, execute
print(timer.protection)
print(len(refused), all(refused))
"""


def test_the_core_seals_its_code_and_tables_before_the_import():
    """Where the kernel has mseal, nobody (the submission included) can make the core's code or GOT
    writable again; the report says what took effect."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", SEALING_CHECK], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    report, counts = run.stdout.splitlines()
    assert report.startswith("key on a page at a random address, no access outside the MAC; call state, events and "
                             "indexes on a page with no access outside the core; tables ")
    if "this kernel has no mseal" in report:
        pytest.skip(report)
    assert "tables read-only and sealed; code sealed" in report
    assert counts.split() == [counts.split()[0], "True"] and int(counts.split()[0]) >= 3


def test_a_sealed_result_verifies_and_rebuilds_the_outputs(core):
    key, timer = core
    data = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    output, entries, tensors = _received(timer.time_call(data, 0, 1234, 0.0))
    seal.verify_call(key, 0, 1234, timer.overhead_us, output, entries, tensors)
    assert torch.equal(tensors[0], data.t() * 2) and torch.equal(tensors[1], data[:1])


def test_outputs_of_many_chunks_verify_and_a_byte_changed_in_any_chunk_breaks_the_seal(core):
    """Outputs over several digest chunks (hashed on several threads on both sides), the
    last one partial: the parent's digest matches the core's, and one byte changed in a late
    chunk of the second output is caught."""
    key, timer = core
    data = torch.arange(3 * leaf_hash.LEAF_BYTES // 4 + 5, dtype=torch.float32).reshape(-1, 1)  # three chunks + 20 B
    output, entries, tensors = _received(timer.time_call(data, 10, 99, 0.0))
    seal.verify_call(key, 10, 99, timer.overhead_us, output, entries, tensors)
    assert torch.equal(tensors[0], data.t() * 2)
    tensors[0].untyped_storage()[3 * leaf_hash.LEAF_BYTES + 7] ^= 1
    with pytest.raises(seal.SealBroken):
        seal.verify_call(key, 10, 99, timer.overhead_us, output, entries, tensors)


def test_each_outputs_leaves_come_back_in_order_one_after_another():
    """Every output's leaves, in order, as one run of bytes each (none for an empty output)."""
    blobs = [os.urandom(size) for size in (0, 5, leaf_hash.LEAF_BYTES, leaf_hash.LEAF_BYTES + 1,
                                           3 * leaf_hash.LEAF_BYTES - 7)]
    outputs = [torch.tensor(list(blob), dtype=torch.uint8) for blob in blobs]
    expected = [b"".join(hashlib.sha256(data[at:at + leaf_hash.LEAF_BYTES]).digest()
                         for at in range(0, len(data), leaf_hash.LEAF_BYTES)) for data in blobs]
    assert output_leaves.leaves(outputs) == expected
    assert [len(leaves) // 32 for leaves in expected] == [0, 1, 1, 2, 3]


TAMPERS = ["time", "output", "index", "seed", "mac", "no_mac", "unfinished", "exposed", "event_us", "clock_us",
           "clock_gap_us", "clock_allowance_us"]


@pytest.mark.parametrize("tamper", TAMPERS)
def test_any_change_breaks_the_seal(core, tamper):
    key, timer = core
    index = 100 + TAMPERS.index(tamper)
    output, entries, tensors = _received(timer.time_call(torch.ones(2, 3), index, 7, 0.0))
    expected_index, seed = index, 7
    if tamper == "time":
        output = dataclasses.replace(output, time_us=output.time_us * 0.6)
    elif tamper == "output":
        tensors[0].untyped_storage()[0] = 1
    elif tamper == "index":
        expected_index = index + 1  # a result replayed for the next call
    elif tamper == "seed":
        seed = 8
    elif tamper == "mac":
        output = dataclasses.replace(output, mac=bytes(32))
    elif tamper == "no_mac":
        output = dataclasses.replace(output, mac=b"")
    elif tamper.endswith("_us"):  # the second clock's reading: a re-arm passed off as agreeing (zero on the CPU)
        output = dataclasses.replace(output, **{tamper: getattr(output, tamper) + 1.5})
    else:  # a flag flipped: unfinished work hidden, or an exposed time passed off as clean
        output = dataclasses.replace(output, **{tamper: not getattr(output, tamper)})
    with pytest.raises(seal.SealBroken):
        seal.verify_call(key, expected_index, seed, timer.overhead_us, output, entries, tensors)


def test_the_core_refuses_a_second_key_a_second_kernel_and_old_indexes(core):
    _, timer = core
    read_fd, write_fd = os.pipe()
    os.write(write_fd, bytes(32))
    os.close(write_fd)
    with pytest.raises(RuntimeError, match="already initialized"):
        _sealed.init(read_fd, None, 0, {})
    with pytest.raises(RuntimeError, match="already bound"):
        _sealed.bind(lambda path: None, "again")
    timer.time_call(torch.ones(1), 1000, 0, 0.0)
    with pytest.raises(RuntimeError, match="already timed"):
        timer.time_call(torch.ones(1), 1000, 0, 0.0)


def test_no_collection_runs_while_the_core_reads_the_outputs(core):
    """A collection calls gc.callbacks and finalizers, the submission's Python: none may run between
    custom_kernel's return and the MAC (s11_gc_callback_in_window.py did its work there)."""
    _, timer = core
    returned, collections = [], []

    def callback(phase, info):
        if phase == "start":
            collections.append(bool(returned))

    thresholds = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1, 1_000_000, 1_000_000)  # any allocation starts a collection
    ON_RETURN.append(lambda: returned.append(True))
    try:
        answer = timer.time_call(torch.ones(2, 3), 2000, 0, 0.0)
        count = len(collections)  # an int: no allocation that could start a collection
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*thresholds)
        ON_RETURN.clear()
    assert answer[0] == "ok" and gc.isenabled()
    assert returned and True not in collections[:count], "a collection ran between custom_kernel's return and the MAC"


def test_the_recheck_is_signed_over_the_parents_nonce(core):
    key, timer = core
    nonce = os.urandom(seal.NONCE_BYTES)
    overhead_us, fresh_us, spread_us, mac = timer.recheck(nonce)
    rechecked = messages.Rechecked(overhead_us=overhead_us, fresh_us=fresh_us, spread_us=spread_us, mac=mac)
    assert seal.verify_recheck(key, nonce, rechecked) == (overhead_us, fresh_us, spread_us)
    with pytest.raises(seal.SealBroken):
        seal.verify_recheck(key, os.urandom(seal.NONCE_BYTES), rechecked)


def test_overhead_moved_flags_drift_and_adopts_only_consistent_values():
    assert seal.overhead_moved(2.5, 2.3, 0.1, 2.5) == (False, True)  # each case subtracts its own measurement
    assert seal.overhead_moved(2.5, 2.6, 0.1, 2.5) == (False, True)  # a raise within 0.1 us of the first
    assert seal.overhead_moved(2.5, 1.9, 0.1, 2.5) == (True, True)
    assert seal.overhead_moved(2.5, 4.0, 0.1, 2.5) == (True, False)  # a busy GPU lengthens it: never adopted
    assert seal.overhead_moved(2.5, 28.0, 0.1, 2.5) == (True, False)
    assert seal.overhead_moved(2.5, 2.6, 3.0, 2.5) == (True, False)


def test_a_view_outside_its_storage_is_a_protocol_error():
    entry = {"dtype": "float32", "shape": [4], "stride": [1], "offset": 2, "nbytes": 16}
    with pytest.raises(protocol.ProtocolError):
        protocol.tensor_from_wire(entry, bytes(16))


def test_without_the_core_the_worker_falls_back_to_the_python_timer_and_never_reads_the_key(monkeypatch):
    from harness.worker.serve_loop import Worker

    monkeypatch.setattr(sealed_core, "_sealed", None)
    _, read_fd = worker_spawn.new_key_pipe()
    worker = Worker(-1, -1, read_fd)
    worker.device = torch.device("cpu")
    assert isinstance(worker._make_timer(), timers.CpuTimer)
    with pytest.raises(OSError):
        os.fstat(read_fd)  # closed unread


def test_an_unsealed_worker_is_the_parents_choice_and_never_reads_the_key():
    """Under Nsight Compute the parent asks for a worker without the core (its graph-based start
    fails there); the worker closes the key unread and the parent expects no MAC from it."""
    from harness.worker.serve_loop import Worker

    _, read_fd = worker_spawn.new_key_pipe()
    worker = Worker(-1, -1, read_fd)
    worker.device = torch.device("cpu")
    assert sealed_core.sealed_available() and isinstance(worker._make_timer(unsealed=True), timers.CpuTimer)
    with pytest.raises(OSError):
        os.fstat(read_fd)


@pytest.mark.parametrize("index", [0, 7, 2**62])
def test_the_cores_window_message_is_the_wires_window_closed(index: int) -> None:
    """The frame the compiled core writes when a call's window is over (csrc/output_copies.c) reads back as the
    protocol's WindowClosed record for that call."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, _sealed.window_message(index))
        received = protocol.receive_message(read_fd, messages.REPLIES)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert received.message == messages.WindowClosed(index=index) and received.tensors == []
