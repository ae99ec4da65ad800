"""The parent's own copy of a call's inputs on a CUDA check device, replayed from a graph of the shape's draw.

A draw is many small kernels (the counter generator's, per tensor per group): 5.6-6.8 ms per timed call
for the grouped GEMM on the H100 (docs/results.md run 16), most of it launches. Here a shape's first draw
runs eagerly (its kernels compiled: no compiler runs inside a capture), its second is captured into a
CUDA graph (problems/shared/draw_graph.py) and every later one replays it under the call's seed: the
same code's kernels, so the same bits as ``generate_input``. The graph's tensors are reused: a draw from
here is valid until the next draw of the same shape, so only a call whose inputs die with its check
takes one (call_checker: never kept, never computed ahead on another thread).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from harness.contract.task_spec import shape_text
from problems.shared.draw_graph import CapturedDraw, capture_draw, replay


class GraphDraws:
    """The captured draws of one problem on one CUDA device, one per shape drawn at least twice."""

    def __init__(self, generate: Callable[..., Any], device: torch.device,
                 capture: Callable[[Callable[[], Any], torch.device], CapturedDraw] | None = None,
                 replay_draw: Callable[[CapturedDraw, int], Any] = replay) -> None:
        self.generate = generate  # the problem's generate_input
        self.device = device
        # The parent's other threads may use CUDA meanwhile: only this thread's calls must suit a capture.
        self._capture = capture or functools.partial(capture_draw, error_mode="thread_local")
        self._replay = replay_draw  # these two: the tests' stand-ins on the CPU
        self._seen: set[str] = set()  # shapes drawn once, eagerly
        self._graphs: dict[str, CapturedDraw | None] = {}  # None: its capture failed, it stays eager

    def draw(self, seeded: dict[str, Any]) -> Any:
        """The inputs of ``seeded`` (a case with its call's seed), queued on the current stream: eager the
        first time a shape is drawn (and where its capture failed), replayed from its graph afterwards."""
        shape = shape_text(seeded)
        eager = functools.partial(self.generate, **seeded, device=self.device)
        if shape not in self._seen:
            self._seen.add(shape)
            return eager()
        if shape not in self._graphs:
            try:
                self._graphs[shape] = self._capture(eager, self.device)
            except Exception:  # a draw torch cannot capture is still the problem's draw, drawn eagerly
                self._graphs[shape] = None
        captured = self._graphs[shape]
        return eager() if captured is None else self._replay(captured, int(seeded["seed"]))

    def replays(self, case: dict[str, Any]) -> bool:
        """Whether ``case``'s shape is drawn from its graph now (not while drawn fewer than twice, nor where
        its capture failed): scripts/parent_draw_check.py fails a shape that never gets there."""
        return self._graphs.get(shape_text(case)) is not None
