"""harness.judge.verdict.graph_draws: a shape's first draw and reference are eager, its second captured, later ones
replayed; a capture that fails leaves only its own part eager."""

from __future__ import annotations

import types

import torch

from harness.judge.verdict.graph_draws import GraphDraws, expected_kernel
from problems.shared.draw_graph import CapturedDraw


class Recorder:
    """generate_input, ref_kernel, capture and replay stand-ins that log what ran (no GPU here).

    A stand-in graph keeps the function it captured and reruns it on replay (with the seed where it is a
    draw): what a CUDA graph does, the same kernels on the same tensors, here with fresh ones."""

    def __init__(self, fails: frozenset[str] = frozenset()) -> None:
        self.log: list[tuple] = []
        self.fails = fails  # "draw", "reference": the captures that raise

    def generate(self, n: int, seed: int, device: torch.device) -> tuple:
        self.log.append(("draw", n, seed))
        return (torch.full((n,), float(seed)),)

    def reference(self, data: tuple) -> torch.Tensor:
        self.log.append(("reference", data[0].numel(), int(data[0][0])))
        return data[0] * 2 + 1

    def capture(self, work, device: torch.device, pool) -> CapturedDraw:
        kind = "reference" if pool == "pool" else "draw"
        if kind in self.fails:
            raise RuntimeError("operation not permitted when stream is capturing")
        data = work()  # a capture runs the work's code once
        self.log[-1] = (f"captured {kind}", *self.log[-1][1:])
        return CapturedDraw(work, data, [])

    def replay(self, captured: CapturedDraw, seed: int) -> tuple | torch.Tensor:
        if isinstance(captured.data, tuple):  # a draw: the graph's tensors refilled under the seed
            self.log.append(("replayed draw", captured.data[0].numel(), seed))
            captured.data[0].fill_(float(seed))
        else:  # a reference: rerun on the draw graph's tensors, into its own output
            captured.data.copy_(captured.graph())
            self.log[-1] = ("replayed reference", *self.log[-1][1:])  # the rerun is the replay, not an eager one
        return captured.data

    def draws(self, with_reference: bool = True) -> GraphDraws:
        made = GraphDraws(self.generate, torch.device("cpu"), self.reference if with_reference else None,
                          self.capture, self.replay)
        made._pool = "pool"  # on a GPU the references' shared pool; the draws capture into their own
        return made


def test_each_shape_is_drawn_eagerly_then_captured_then_replayed_under_the_calls_seed():
    recorder = Recorder()
    draws = recorder.draws(with_reference=False)
    for seed in (1, 2, 3):
        for n in (4, 8):
            (tensor,), expected = draws.draw({"n": n, "seed": seed})
            assert tensor.tolist() == [float(seed)] * n and expected is None
        assert draws.replays({"n": 4}) == (seed > 1)
    assert recorder.log == [("draw", 4, 1), ("draw", 8, 1), ("captured draw", 4, 2), ("replayed draw", 4, 2),
                            ("captured draw", 8, 2), ("replayed draw", 8, 2), ("replayed draw", 4, 3),
                            ("replayed draw", 8, 3)]
    assert not draws.replays_reference({"n": 4})


def test_the_reference_is_captured_on_the_draws_tensors_and_replayed_right_after_it():
    recorder = Recorder()
    draws = recorder.draws()
    for seed in (1, 2, 3):
        (tensor,), expected = draws.draw({"n": 4, "seed": seed})
        assert expected.tolist() == (tensor * 2 + 1).tolist() == [2.0 * seed + 1] * 4
    assert recorder.log == [("draw", 4, 1), ("reference", 4, 1), ("captured draw", 4, 2), ("replayed draw", 4, 2),
                            ("captured reference", 4, 2), ("replayed reference", 4, 2), ("replayed draw", 4, 3),
                            ("replayed reference", 4, 3)]
    assert draws.replays_reference({"n": 4})


def test_a_replay_reuses_the_shapes_tensors_and_its_expected_output():
    """Why the checker hands only passing calls here: the next draw of the shape overwrites the last."""
    draws = Recorder().draws()
    draws.draw({"n": 2, "seed": 1})
    second, second_expected = draws.draw({"n": 2, "seed": 2})
    third, third_expected = draws.draw({"n": 2, "seed": 3})
    assert third[0] is second[0] and second[0].tolist() == [3.0, 3.0]
    assert third_expected is second_expected and second_expected.tolist() == [7.0, 7.0]


def test_a_shape_whose_draw_capture_fails_stays_eager_reference_included():
    recorder = Recorder(fails=frozenset({"draw"}))
    draws = recorder.draws()
    values = [[t.tolist() for t in (inputs[0], expected)]
              for inputs, expected in (draws.draw({"n": 2, "seed": seed}) for seed in (1, 2, 3))]
    assert values == [[[1.0, 1.0], [3.0, 3.0]], [[2.0, 2.0], [5.0, 5.0]], [[3.0, 3.0], [7.0, 7.0]]]
    assert recorder.log == [(kind, 2, seed) for seed in (1, 2, 3) for kind in ("draw", "reference")]
    assert not draws.replays({"n": 2}) and not draws.replays_reference({"n": 2})


def test_a_reference_that_cannot_be_captured_runs_eagerly_on_the_replayed_draw():
    recorder = Recorder(fails=frozenset({"reference"}))
    draws = recorder.draws()
    expected = [draws.draw({"n": 2, "seed": seed})[1].tolist() for seed in (1, 2, 3)]
    assert expected == [[3.0, 3.0], [5.0, 5.0], [7.0, 7.0]]
    assert recorder.log == [("draw", 2, 1), ("reference", 2, 1), ("captured draw", 2, 2), ("replayed draw", 2, 2),
                            ("reference", 2, 2), ("replayed draw", 2, 3), ("reference", 2, 3)]
    assert draws.replays({"n": 2}) and not draws.replays_reference({"n": 2})


def test_the_expected_output_is_computed_only_for_a_check_that_takes_it() -> None:
    def ref_kernel(data):
        return data

    takes = types.SimpleNamespace(check_implementation=lambda data, output, expected=None: (True, ""),
                                  ref_kernel=ref_kernel)
    computes_its_own = types.SimpleNamespace(check_implementation=lambda data, output: (True, ""),
                                             ref_kernel=ref_kernel)
    assert expected_kernel(takes) is ref_kernel
    assert expected_kernel(computes_its_own) is None
