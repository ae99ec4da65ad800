"""The wire's vocabulary: every message kind round-trips, and anything else is refused in one line."""

import os

import pytest
import torch

from harness.contract import messages, protocol
from harness.contract.messages import ProtocolError
from harness.contract.results import Status

SAMPLES = [
    messages.Start(device="cpu", reference_module="problems.nvfp4_gemv.reference", task_py="/p/task.py",
                   submission="/s/submission.py", unsealed=True),
    messages.Ready(import_s=0.5, timer="wall clock", persisting_l2_reset=False, sealed=True, overhead_us=2.5,
                   sandbox={"uid": "65534"}),
    messages.Ready(import_s=0.5, timer="wall clock", persisting_l2_reset=False, sealed=False, overhead_us=None,
                   sandbox={}),
    messages.Prepare(case={"m": 128, "k": 256, "seed": 7}),
    messages.Prepared(placements=[{"index": 0, "start": 4096, "nbytes": 64}], spent_ms={"draw": 1.5}),
    messages.Call(case={"m": 128, "seed": 7}, sleep_us=40.0, index=3, plain=True),
    messages.Output(time_us=1.25, host_us=3.0, structure="list", unfinished=False, exposed=True, mac=bytes(range(32)),
                    spent_ms={"core": 0.2}),
    messages.Profile(case={"m": 128, "seed": 7}, under_ncu=True),
    messages.Profiled(table="Name  Self CPU"),
    messages.Recheck(nonce=os.urandom(16)),
    messages.Rechecked(overhead_us=2.5, fresh_us=2.6, spread_us=0.1, mac=os.urandom(32)),
    messages.Stop(),
    messages.WindowClosed(index=3),
    messages.Error(status=Status.CUDA_ERROR, message="CUDA error: an illegal memory access", traceback="Traceback"),
]


def _kinds(message):
    return messages.REQUESTS if message.KIND in messages.REQUESTS else messages.REPLIES


def test_the_samples_cover_every_kind_and_no_kind_is_named_twice():
    assert {type(m) for m in SAMPLES} == {*messages.REQUESTS.values(), *messages.REPLIES.values()}
    assert not set(messages.REQUESTS) & set(messages.REPLIES)


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: m.KIND)
def test_every_kind_round_trips_through_its_header(message):
    header = messages.encode(message)
    assert header[messages.KIND_KEY] == message.KIND
    assert messages.decode(header, _kinds(message)) == message


def test_a_reply_round_trips_with_its_tensors_through_a_pipe():
    read_fd, write_fd = os.pipe()
    try:
        protocol.send_message(write_fd, SAMPLES[6], [torch.arange(6, dtype=torch.float32).reshape(2, 3)])
        received = protocol.receive_message(read_fd, messages.REPLIES)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert received.message == SAMPLES[6] and received.entries[0]["shape"] == [2, 3]
    assert torch.equal(received.tensors[0], torch.arange(6, dtype=torch.float32).reshape(2, 3))


OUTPUT = messages.encode(SAMPLES[6])


@pytest.mark.parametrize(("header", "expected", "words"), [
    ({messages.KIND_KEY: "teleport"}, messages.REPLIES, "kind 'teleport' where only ready,"),
    ({}, messages.REPLIES, "kind None"),
    (messages.encode(SAMPLES[5]), messages.REPLIES, "kind 'call' where only"),  # a request from the worker
    (messages.encode(SAMPLES[6]), messages.REQUESTS, "kind 'output' where only start,"),  # a reply to the worker
    ({k: v for k, v in OUTPUT.items() if k != "time_us"}, messages.REPLIES, "'output' with no time_us"),
    ({**OUTPUT, "verdict": "passed"}, messages.REPLIES, "'output' with unknown field(s) verdict"),
    ({**OUTPUT, "time_us": "1.0"}, messages.REPLIES, "'output' whose time_us is not of type float"),
    ({**OUTPUT, "unfinished": 0}, messages.REPLIES, "'output' whose unfinished is not of type bool"),
    ({**OUTPUT, "mac": "not hex"}, messages.REPLIES, "'output' whose mac is not of type bytes"),
    ({**OUTPUT, "spent_ms": []}, messages.REPLIES, "'output' whose spent_ms is not of type dict"),
    ({**messages.encode(SAMPLES[-1]), "status": "sideways"}, messages.REPLIES,
     "'error' whose status is not of type Status"),
    ({**messages.encode(SAMPLES[-1]), "status": "passed"}, messages.REPLIES,
     "'error' whose status 'passed' is not a failure a worker may report"),
    ({**messages.encode(SAMPLES[5]), "index": 1.0}, messages.REQUESTS, "'call' whose index is not of type int"),
    ({**messages.encode(SAMPLES[4]), "placements": [1]}, messages.REPLIES, "whose placements is not of type list"),
], ids=lambda value: str(value)[:30])
def test_unknown_or_malformed_messages_are_refused_in_one_line(header, expected, words):
    with pytest.raises(ProtocolError) as refused:
        messages.decode(header, expected)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_worker_can_report_only_a_failure():
    assert Status.PASSED not in messages.WORKER_FAILURES and Status.TIMEOUT not in messages.WORKER_FAILURES
    with pytest.raises(ValueError, match="not a failure a worker may report"):
        messages.Error(status=Status.PASSED, message="all good")
