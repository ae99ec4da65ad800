"""A drawn call's operands (issue 40 part D): the tensors of a captured draw hold the graph pool's leftovers
until the core's replay, so the worker takes their operands from the eager draw at Start, not from their
contents. On the H100 (2026-11-26) reading the contents counted the NaN-poisoned output buffer as an
operand, and every honest ranked run was rejected for returning it."""

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from harness.contract.messages import Call, Output
from harness.contract.task_spec import shape_text
from harness.contract.tensor_tree import tensors_in
from harness.worker import sealed_core, serve_loop
from harness.worker.drawn_inputs import Draw, DrawnInputs, operand_indices
from harness.worker.failures import SubmissionError
from harness.worker.outputs import any_shares_memory, operand_tensors, storage_spans
from problems.nvfp4_gemv import reference

CASE = {"m": 128, "k": 256, "l": 1, "seed": 1111}


def captured_stand_in() -> tuple[Any, tuple[int, ...]]:
    """(a capture's tensors as a drawn call first sees them, its operands by the eager draw): the same
    tensors, shapes and strides as the case's draw, holding zeros (a fresh pool's bytes: the capture
    launched nothing, so the output buffer is not NaN yet)."""
    eager = reference.generate_input(**CASE, device="cpu")
    return tuple(torch.zeros_like(t) for t in eager), operand_indices(eager)


def test_a_capture_not_yet_replayed_hides_its_output_buffer():
    """The cause: judged by its contents, a captured draw's output buffer (c, the last tensor) is an
    operand, and an honest output (c itself) shares memory with it."""
    captured, operands = captured_stand_in()
    c = captured[-1]
    assert any(t is c for t in operand_tensors(captured))
    assert any_shares_memory([c], storage_spans(operand_tensors(captured)))
    assert len(captured) - 1 not in operands and 0 in operands


def drawn_worker(result_of: Any, sent: list) -> serve_loop.Worker:
    """A worker whose call path runs as on a GPU with a captured draw of CASE: a stand-in core that calls
    ``result_of`` on the tensors and answers as the core does."""
    worker = serve_loop.Worker(-1, -1, -1)
    captured, operands = captured_stand_in()
    worker.drawn._draws[shape_text(CASE)] = (Draw.of(0, captured, operands, None),)
    worker.device = torch.device("cpu")
    worker.guard = SimpleNamespace(violations=lambda: [])
    worker.send = lambda reply, *rest: sent.append(reply)
    timer = object.__new__(sealed_core.SealedTimer)
    timer._streams = []  # the stand-in core takes no CUDA streams
    timer.time_call = lambda data, *args, **kwargs: (
        "ok", 1.0, 1.0, False, False, "tensor", [], b"", result_of(data), (0.0, 0.0, 0.0, 0.0))
    worker.timer = timer
    return worker


def drawn_call() -> Call:
    return Call(case=CASE, sleep_us=0.0, index=1, sealed_seed=bytes(8))


def test_an_honest_drawn_call_returning_its_output_buffer_passes():
    sent: list = []
    drawn_worker(lambda data: data[-1], sent).call(drawn_call())
    assert len(sent) == 1 and isinstance(sent[0], Output)


def test_a_drawn_call_returning_an_input_is_still_rejected():
    for position in range(len(tensors_in(captured_stand_in()[0])) - 1):  # every operand (all but c)
        with pytest.raises(SubmissionError, match="returned one of its input tensors"):
            drawn_worker(lambda data, i=position: data[i], []).call(drawn_call())


def test_the_recorded_operands_are_the_capture_tensors_themselves():
    """inputs() hands back the very tensors of the capture (the ones custom_kernel receives)."""
    drawn = DrawnInputs()
    captured, operands = captured_stand_in()
    drawn._draws[shape_text(CASE)] = (Draw.of(5, captured, operands, None),)
    draw = drawn.inputs(CASE, 3)
    assert draw.slot == 5 and draw.data is captured
    assert [id(t) for t in draw.operands] == [id(captured[i]) for i in operands]
    assert draw.spans == storage_spans(draw.operands)  # found once, at the capture
