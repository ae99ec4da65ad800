"""The parent's own copy of a call's inputs and its expected output on a CUDA check device, replayed from graphs.

A draw is many small kernels (the counter generator's, per tensor per group): 5.6-6.8 ms per timed call
for the grouped GEMM on the H100 (docs/results.md run 16), most of it launches; the reference is many
more (a decode and a float64 product per group: run 17). Here a shape's first draw and reference run
eagerly (their kernels compiled: no compiler runs inside a capture), its second draw is captured into a
CUDA graph (problems/shared/draw_graph.py), then the reference on that graph's tensors into a second
graph, and every later call replays both on the current stream under the call's seed: the same code's
kernels, so the same bits as ``generate_input`` and ``ref_kernel``. The graphs' tensors are reused: the
inputs and expected output from here are valid until the next draw of the same shape, so only a call
whose inputs die with its check takes them (call_checker: never kept, never computed ahead on another
thread). A capture that fails leaves its part eager for that shape: a reference that cannot be captured
still runs, eagerly, on the replayed inputs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from harness.contract.task_spec import shape_text
from problems.shared.draw_graph import CapturedDraw, TableWriter, capture_draw, replay

Capture = Callable[[Callable[[], Any], torch.device, Any], CapturedDraw]


def expected_kernel(reference: ModuleType) -> Callable[[Any], Any] | None:
    """The reference's kernel where the problem's check takes the expected output (``expected=``), else None:
    a check without it computes its own reference, so nothing is computed or replayed for it beforehand."""
    takes = "expected" in inspect.signature(reference.check_implementation).parameters
    return reference.ref_kernel if takes else None


def _capture(work: Callable[[], Any], device: torch.device, pool: Any) -> CapturedDraw:
    """capture_draw where the parent's other threads may use CUDA meanwhile (only this thread's calls
    must suit a capture), into ``pool`` (None: the graph's own), with its tables' writer for every replay."""
    captured = capture_draw(work, device, error_mode="thread_local", pool=pool)
    return captured._replace(writer=TableWriter(captured.tables))


class GraphDraws:
    """The captured draws (and references) of one problem on one CUDA device, per shape drawn at least twice."""

    def __init__(self, generate: Callable[..., Any], device: torch.device,
                 reference: Callable[[Any], Any] | None = None, capture: Capture = _capture,
                 replay_draw: Callable[[CapturedDraw, int], Any] = replay) -> None:
        self.generate = generate  # the problem's generate_input
        self.reference = reference  # its ref_kernel, where the check takes the expected output; else None
        self.device = device
        self._capture, self._replay = capture, replay_draw  # the tests' stand-ins on the CPU
        self._seen: set[str] = set()  # shapes drawn once, eagerly
        self._graphs: dict[str, CapturedDraw | None] = {}  # None: its capture failed, it stays eager
        self._references: dict[str, CapturedDraw | None] = {}  # the same for the reference on the draw's tensors

    def draw(self, seeded: dict[str, Any]) -> tuple[Any, Any]:
        """(the inputs of ``seeded`` (a case with its call's seed), the reference's output on them, or None
        without a reference), queued on the current stream: eager the first time a shape is drawn (and
        where a capture failed), replayed from its graphs afterwards."""
        shape = shape_text(seeded)
        eager = functools.partial(self.generate, **seeded, device=self.device)
        if shape not in self._seen:
            self._seen.add(shape)
            return self._with_reference(eager())
        drawing = self._captured(self._graphs, shape, eager, None)
        if drawing is None:
            return self._with_reference(eager())
        inputs = self._replay(drawing, int(seeded["seed"]))
        if self.reference is None:
            return inputs, None
        checking = self._captured(self._references, shape, functools.partial(self.reference, drawing.data),
                                  self._pool)
        # A reference reads no tables (its seed is unused): its graph reads the draw graph's tensors.
        return (self._with_reference(inputs) if checking is None
                else (inputs, self._replay(checking, int(seeded["seed"]))))

    @functools.cached_property
    def _pool(self) -> Any:
        """The references' graphs' one memory pool: only their outputs stay live (held here), so a shape's
        scratch (the float64 decode of its operands) is reused by the next shape's capture and the pool
        holds the largest reference's, not their sum. One graph's replay may therefore overwrite where
        another shape's expected output lies: sound because the parent checks each call before it draws
        the next (call_checker: answered, then check), on one stream; a shape's first draw, its test's,
        is eager."""
        return torch.cuda.graph_pool_handle() if self.device.type == "cuda" else None

    def replays(self, case: dict[str, Any]) -> bool:
        """Whether ``case``'s shape is drawn from its graph now (not while drawn fewer than twice, nor where
        its capture failed): scripts/parent_draw_check.py fails a shape that never gets there."""
        return self._graphs.get(shape_text(case)) is not None

    def replays_reference(self, case: dict[str, Any]) -> bool:
        """Whether ``case``'s expected output comes from a graph now (its draw's replayed, its own captured)."""
        return self.replays(case) and self._references.get(shape_text(case)) is not None

    def _with_reference(self, inputs: Any) -> tuple[Any, Any]:
        """(``inputs``, the reference run eagerly on them, or None without a reference)."""
        return inputs, None if self.reference is None else self.reference(inputs)

    def _captured(self, graphs: dict[str, CapturedDraw | None], shape: str, work: Callable[[], Any],
                  pool: Any) -> CapturedDraw | None:
        """``shape``'s graph of ``work`` in ``graphs``, captured the first time it is asked for."""
        if shape not in graphs:
            try:
                graphs[shape] = self._capture(work, self.device, pool)
            except Exception:  # work torch cannot capture is still the problem's, run eagerly
                graphs[shape] = None
        return graphs[shape]
