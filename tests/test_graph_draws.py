"""harness.judge.verdict.graph_draws: a shape's first draw is eager, its second captured, later ones replayed."""

from __future__ import annotations

import torch

from harness.judge.verdict.graph_draws import GraphDraws
from problems.shared.draw_graph import CapturedDraw


class Recorder:
    """generate_input, capture and replay stand-ins that log what ran (no GPU here)."""

    def __init__(self, capture_fails: bool = False) -> None:
        self.log: list[tuple] = []
        self.capture_fails = capture_fails

    def generate(self, n: int, seed: int, device: torch.device) -> tuple:
        self.log.append(("eager", n, seed))
        return (torch.full((n,), float(seed)),)

    def capture(self, draw, device: torch.device) -> CapturedDraw:
        if self.capture_fails:
            raise RuntimeError("operation not permitted when stream is capturing")
        data = draw()  # a capture runs the draw's code once
        self.log[-1] = ("captured", *self.log[-1][1:])
        return CapturedDraw(None, data, [])

    def replay(self, captured: CapturedDraw, seed: int) -> tuple:
        self.log.append(("replay", captured.data[0].numel(), seed))
        captured.data[0].fill_(float(seed))
        return captured.data

    def draws(self) -> GraphDraws:
        return GraphDraws(self.generate, torch.device("cpu"), self.capture, self.replay)


def test_each_shape_is_drawn_eagerly_then_captured_then_replayed_under_the_calls_seed():
    recorder = Recorder()
    draws = recorder.draws()
    for seed in (1, 2, 3):
        for n in (4, 8):
            (tensor,) = draws.draw({"n": n, "seed": seed})
            assert tensor.tolist() == [float(seed)] * n
        assert draws.replays({"n": 4}) == (seed > 1)
    assert recorder.log == [("eager", 4, 1), ("eager", 8, 1), ("captured", 4, 2), ("replay", 4, 2),
                            ("captured", 8, 2), ("replay", 8, 2), ("replay", 4, 3), ("replay", 8, 3)]


def test_a_replay_reuses_the_shapes_tensors():
    """Why the checker hands only passing calls here: the next draw of the shape overwrites the last."""
    draws = Recorder().draws()
    draws.draw({"n": 2, "seed": 1})
    second = draws.draw({"n": 2, "seed": 2})[0]
    third = draws.draw({"n": 2, "seed": 3})[0]
    assert third is second and second.tolist() == [3.0, 3.0]


def test_a_shape_whose_capture_fails_stays_eager():
    recorder = Recorder(capture_fails=True)
    draws = recorder.draws()
    values = [draws.draw({"n": 2, "seed": seed})[0].tolist() for seed in (1, 2, 3)]
    assert values == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
    assert recorder.log == [("eager", 2, 1), ("eager", 2, 2), ("eager", 2, 3)]
    assert not draws.replays({"n": 2})
