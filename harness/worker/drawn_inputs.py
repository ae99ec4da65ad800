"""Drawn inputs: a GPU worker's timed calls' inputs drawn by its compiled core, from graphs captured here.

Before the submission's import, for each benchmark case the parent names (``Start.draws``, in every
timed mode, ranked or not: evaluation.core_draws; tests are untimed and keep the ordinary draw), the
worker runs the problem's own ``generate_input`` once (its kernels compiled, its caches filled, and its
tensors show which are operands: see ``operand_indices``), then captures a second run into a CUDA graph
while the draw's kernels record their tables instead of copying them (problems/shared/kernel_tables.py;
problems/shared/draw_graph.py, which the parent's replay of its own draw shares). The core
instantiates the graph into an executable graph of its own and keeps it, with every table's device
address and contents, on read-only pages of its own image (harness/worker/csrc/drawn_inputs.c). Each
drawn call, the core writes the tables, the hash tables' keys derived from the call's seed (which
reaches only the core, masked), and replays the graph before the hold; the tensors the capture
returned (fixed addresses in the graph's pool) are the call's inputs.

Each shape is captured up to ``DRAW_PLACEMENTS`` times, each capture in a pool of its own, and its calls take
the placements in turn. A short kernel's time depends on where its buffers lie: on an H200 a 2 us kernel
read 0.06-0.3 us more at some placements than at others, the same placement alike every time within a
process (docs/timing.md, "The short rungs move by where their inputs lie"). With one placement a worker
process, that offset was the process's, and a short rung's ranked median moved from one process to the
next; taken in turn, the placements' offsets fall inside every case's spread instead.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import torch

from harness.contract.messages import DRAW_PLACEMENTS
from harness.contract.results import Status
from harness.contract.task_spec import shape_text
from harness.contract.tensor_tree import tensors_in
from harness.worker.failures import SubmissionError
from harness.worker.outputs import Span, operand_tensors, storage_spans

PLACEMENT_BYTES = 1 << 30
"""The GPU memory a shape's placements may take together (one 200 MB draw gets five)."""


def placements(draw_bytes: int, slots: int) -> int:
    """How many placements a shape's draw gets: up to DRAW_PLACEMENTS, within PLACEMENT_BYTES of its
    tensors and within ``slots``, the shape's share of the core's; at least one."""
    return max(1, min(DRAW_PLACEMENTS, slots, PLACEMENT_BYTES // max(draw_bytes, 1)))


def storage_bytes(data: Any) -> int:
    """The bytes of the distinct storages under ``data``'s tensors."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors_in(data)}
    return sum(storages.values())


def operand_indices(data: Any) -> tuple[int, ...]:
    """The positions (in ``tensors_in(data)``) of the operands of an executed draw: every tensor but the
    NaN-filled output buffers (outputs.operand_tensors). A captured draw's tensors cannot show this
    themselves: the capture ran nothing, so until the core's first replay they hold whatever the graph's
    pool held (its output buffer is not NaN), and the buffer would count as an operand an honest
    custom_kernel returns (the H100's rejections of 2026-11-26)."""
    kept = {id(t) for t in operand_tensors(data)}
    return tuple(i for i, t in enumerate(tensors_in(data)) if id(t) in kept)


class Draw(NamedTuple):
    """One captured draw: the core's slot, the tensors the graph draws into, those of them that are operands
    (``operand_indices`` of the eager draw of the same case) and their storages, and the graph (its pool
    holds the tensors, at the same addresses for the worker's life: found once, not once a call)."""

    slot: int
    data: Any
    operands: list[torch.Tensor]
    spans: list[Span]
    graph: Any

    @classmethod
    def of(cls, slot: int, data: Any, operands: tuple[int, ...], graph: Any) -> Draw:
        """The draw whose operands are ``data``'s tensors at these positions (``operand_indices``)."""
        tensors = tensors_in(data)
        chosen = [tensors[i] for i in operands]
        return cls(slot, data, chosen, storage_spans(chosen), graph)


class DrawnInputs:
    """The captured draws, ``placements`` of them per case shape. Held for the worker's life: each
    graph's pool holds the tensors handed to custom_kernel (the core keeps its own executable graph;
    this graph is never replayed here)."""

    def __init__(self) -> None:
        self._draws: dict[str, tuple[Draw, ...]] = {}

    def capture(self, reference: ModuleType, cases: list[dict[str, Any]], device: torch.device,
                add_draw: Callable[[int, list[tuple[int, bytes, list[tuple[int, bytes]]]]], int],
                slots: int) -> None:
        """Capture the draws of every case shape in ``cases`` and hand each to the core (``add_draw``,
        which holds ``slots`` of them); a failure is the harness's (no submission exists yet)."""
        shapes = {shape_text(case): case for case in cases if shape_text(case) not in self._draws}
        for shape, case in shapes.items():
            try:
                self._draws[shape] = self._capture_shape(reference, case, device, add_draw, slots // len(shapes))
            except Exception as error:
                raise SubmissionError(Status.HARNESS_FAULT, f"capturing the inputs' draw of "
                                      f"{shape} failed: {type(error).__name__}: {error}") from None

    @staticmethod
    def _capture_shape(reference: ModuleType, case: dict[str, Any], device: torch.device,
                       add_draw: Callable[[int, list[tuple[int, bytes, list[tuple[int, bytes]]]]], int],
                       slots: int) -> tuple[Draw, ...]:
        from problems.shared.draw_graph import capture_draw  # every problem's draw goes through it

        # Run once for real: it compiles its kernels (no compiler in a capture) and shows the operands
        # and the bytes a placement takes.
        eager = reference.generate_input(**case, device=device)
        operands, nbytes = operand_indices(eager), storage_bytes(eager)
        del eager
        draws = []
        for _ in range(placements(nbytes, slots)):  # each capture allocates from a pool of its own: new addresses
            graph, data, captured = capture_draw(lambda: reference.generate_input(**case, device=device), device,
                                                 keep_graph=True)[:3]
            tables = [(table.data_ptr(), struct.pack(f"<{table.numel()}q", *itertools.chain(*rows)),
                       [(offset, name.encode()) for offset, name in sorted(keyed.items())])
                      for table, rows, keyed in captured]
            draws.append(Draw.of(add_draw(graph.raw_cuda_graph(), tables), data, operands, graph))
        return tuple(draws)

    def inputs(self, case: dict[str, Any], index: int) -> Draw:
        """The draw for call ``index`` of ``case``: the shape's placements in turn. Its core slot, the
        tensors it draws into, the operands among them (the ones custom_kernel must not return) and their
        storages."""
        draws = self._draws.get(shape_text(case))
        if not draws:
            raise SubmissionError(Status.HARNESS_FAULT, f"a drawn call for {shape_text(case)}, whose draw was "
                                  "not captured at Start")
        return draws[index % len(draws)]

    def counts(self) -> dict[str, int]:
        """How many placements each captured shape has (Ready.placements: the parent warms them all)."""
        return {shape: len(draws) for shape, draws in self._draws.items()}
