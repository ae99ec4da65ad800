"""A shape's draw captured at several placements, taken in turn (harness/worker/drawn_inputs.py): on an H200 a
2 us kernel's time depended on where its buffers lay, alike within a process, so one placement a worker made a
short rung's median move from process to process (docs/timing.md, "The short rungs move by where their inputs
lie"). The capture is stood in for on the CPU: each stand-in capture allocates fresh tensors, as a capture into
a pool of its own does."""

from types import SimpleNamespace

import pytest
import torch

from harness.contract.messages import DRAW_PLACEMENTS as PLACEMENTS
from harness.contract.tensor_tree import tensors_in
from harness.worker.drawn_inputs import DrawnInputs, placements, storage_bytes
from harness.worker.failures import SubmissionError
from problems.nvfp4_gemv import reference
from problems.shared import draw_graph

CASES = [{"m": 128, "k": 256, "l": 1, "seed": 1111}, {"m": 256, "k": 512, "l": 1, "seed": 1111}]


def test_placements_take_the_most_the_memory_and_the_cores_slots_allow():
    assert placements(draw_bytes=1 << 20, slots=128 // 4) == PLACEMENTS
    assert placements(draw_bytes=200 << 20, slots=128 // 4) == 5  # 1 GiB over 200 MB
    assert placements(draw_bytes=1 << 20, slots=128 // 40) == 3  # the core's slots shared by 40 shapes
    assert placements(draw_bytes=1 << 20, slots=128 // 200) == 1  # never none
    assert placements(draw_bytes=4 << 30, slots=128) == 1


def test_storage_bytes_counts_each_storage_once():
    base = torch.zeros(1000, dtype=torch.uint8)
    assert storage_bytes((base, base[10:20], torch.zeros(24, dtype=torch.uint8))) == 1024


def captured_drawn(monkeypatch: pytest.MonkeyPatch, slots: int = 128) -> tuple[DrawnInputs, list]:
    """Every case of CASES captured through stand-ins for torch's capture and the core's add_draw."""
    added: list = []

    def stand_in_capture(draw, device, keep_graph=False, **_):
        return SimpleNamespace(raw_cuda_graph=lambda: len(added)), draw(), []

    monkeypatch.setattr(draw_graph, "capture_draw", stand_in_capture)
    drawn = DrawnInputs()
    drawn.capture(reference, CASES * 2, torch.device("cpu"), lambda graph, tables: added.append(graph) or graph, slots)
    return drawn, added


def test_each_shape_gets_its_placements_at_addresses_of_their_own(monkeypatch):
    drawn, added = captured_drawn(monkeypatch)
    assert len(added) == 2 * PLACEMENTS  # a shape listed twice is captured once
    for case in CASES:
        draws = [drawn.inputs(case, index) for index in range(PLACEMENTS)]
        assert len({draw.slot for draw in draws}) == PLACEMENTS
        addresses = [tuple(t.data_ptr() for t in tensors_in(draw.data)) for draw in draws]
        assert len(set(addresses)) == PLACEMENTS


def test_calls_take_the_placements_in_turn(monkeypatch):
    drawn, _ = captured_drawn(monkeypatch, slots=6)  # three a shape
    slots = [drawn.inputs(CASES[1], index).slot for index in range(7)]
    assert slots == [3, 4, 5, 3, 4, 5, 3]
    assert set(drawn.counts().values()) == {3} and len(drawn.counts()) == 2  # what Ready tells the parent


def test_a_shape_never_captured_is_the_harnesss_fault(monkeypatch):
    drawn, _ = captured_drawn(monkeypatch)
    with pytest.raises(SubmissionError, match="not captured at Start"):
        drawn.inputs({"m": 512, "k": 256, "l": 1, "seed": 1}, 0)


def test_a_failed_capture_is_the_harnesss_fault(monkeypatch):
    monkeypatch.setattr(draw_graph, "capture_draw", lambda *args, **kwargs: 1 / 0)
    with pytest.raises(SubmissionError, match=r"capturing the inputs' draw of .* failed: ZeroDivisionError"):
        DrawnInputs().capture(reference, CASES, torch.device("cpu"), lambda graph, tables: 0, 128)



def test_the_parent_believes_no_more_placements_than_a_worker_may_take():
    """Ready comes from the worker after the submission's import, so its counts may be forged: the parent keeps the
    warm-up bounded (a larger claim could only lengthen it) and counts nothing for a shape the core does not draw."""
    from harness.judge.worker_link.worker_channel import WorkerSession

    session = object.__new__(WorkerSession)
    shape = "m=128 k=256 l=1"
    session.sealed, session._drawn, session._placements = True, {shape}, {shape: 10**9}
    case = {"m": 128, "k": 256, "l": 1, "seed": 5}
    assert session.placements(case) == PLACEMENTS
    session._placements = {shape: 0}
    assert session.placements(case) == 1
    session._placements = {}
    assert session.placements(case) == 1
    session._placements, session._drawn = {shape: 4}, set()
    assert session.placements(case) == 1
