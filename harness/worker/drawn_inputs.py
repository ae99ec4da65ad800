"""Drawn inputs: a GPU worker's ranked calls' inputs drawn by its compiled core, from graphs captured here.

Before the submission's import, for each case the parent names (``Start.draws``), the worker runs the
problem's own ``generate_input`` once (its kernels compiled, its caches filled), then captures a second
run into a CUDA graph while the counter generator records its kernel tables instead of copying them
(``counter_rng.captured_tables``). The core instantiates the graph into an executable graph of its own
and keeps it, with every table's device address and contents, on read-only pages of its own image
(harness/worker/csrc/drawn_inputs.c). Each drawn call, the core writes the tables, the hash tables' keys
derived from the call's seed (which reaches only the core, masked), and replays the graph before the
hold; the tensors the capture returned (fixed addresses in the graph's pool) are the call's inputs.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from harness.contract.results import Status
from harness.contract.task_spec import shape_text
from harness.worker.failures import SubmissionError


class DrawnInputs:
    """The captured draws, one per case shape. Held for the worker's life: each graph's pool holds the
    tensors handed to custom_kernel (the core keeps its own executable graph; this graph is never
    replayed here)."""

    def __init__(self) -> None:
        self._draws: dict[str, tuple[int, Any, torch.cuda.CUDAGraph]] = {}

    def capture(self, reference: ModuleType, cases: list[dict[str, Any]], device: torch.device,
                add_draw: Callable[[int, list[tuple[int, bytes, list[tuple[int, bytes]]]]], int]) -> None:
        """Capture the draw of every case shape in ``cases`` and hand it to the core (``add_draw``); a
        failure is the harness's (no submission exists yet)."""
        for case in cases:
            if shape_text(case) not in self._draws:
                try:
                    self._draws[shape_text(case)] = self._capture_one(reference, case, device, add_draw)
                except Exception as error:
                    raise SubmissionError(Status.HARNESS_FAULT, f"capturing the inputs' draw of "
                                          f"{shape_text(case)} failed: {type(error).__name__}: {error}") from None

    @staticmethod
    def _capture_one(reference: ModuleType, case: dict[str, Any], device: torch.device,
                     add_draw: Callable[[int, list[tuple[int, bytes, list[tuple[int, bytes]]]]], int]
                     ) -> tuple[int, Any, torch.cuda.CUDAGraph]:
        from problems.shared import counter_rng  # every problem's draw goes through it

        reference.generate_input(**case, device=device)  # compiles its kernels: no compiler in a capture
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        with counter_rng.captured_tables() as capture, torch.cuda.graph(graph):
            data = reference.generate_input(**case, device=device)
        tables = [(table.data_ptr(), struct.pack(f"<{table.numel()}q", *itertools.chain(*rows)),
                   [(offset, name.encode()) for offset, name in sorted(keyed.items())])
                  for table, rows, keyed in capture.tables]
        return add_draw(graph.raw_cuda_graph(), tables), data, graph

    def inputs(self, case: dict[str, Any]) -> tuple[int, Any]:
        """(the core's slot for ``case``'s draw, the tensors it draws into)."""
        if shape_text(case) not in self._draws:
            raise SubmissionError(Status.HARNESS_FAULT, f"a drawn call for {shape_text(case)}, whose draw was "
                                  "not captured at Start")
        slot, data, _ = self._draws[shape_text(case)]
        return slot, data
