"""A problem's input draw captured once into a CUDA graph, then replayed under any seed: its tables written first.

Every draw goes through the counter generator (counter_rng), whose kernels read their streams' keys in
small device tables (kernel_tables). Under ``kernel_tables.captured_tables`` a capture leaves those tables unwritten
and records what they must hold; a replay writes them for the call's seed (``TableWriter``: the rows as
captured, each named row's two key words its stream's keys under the seed) and replays the graph, whose
tensors (fixed addresses in the graph's pool) then hold that seed's draw, bit for bit the problem's
``generate_input`` (the same code ran, the same kernels replay). Used by the worker
(harness/worker/drawn_inputs.py: its compiled core replays the graph) and by the parent
(harness/judge/verdict/graph_draws.py: torch replays it). The tensors are reused: each replay overwrites
the last one's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from problems.shared import counter_rng, kernel_tables

Table = tuple[torch.Tensor, list[tuple[int, ...]], dict[int, str]]


class TableWriter:
    """Writes a captured draw's tables for a seed: every row as captured, laid end to end in one host array
    once, then per replay only the named rows' two key words filled in (their streams' keys under the
    seed: the table an ordinary draw under that seed launches with) and one pinned copy to the device. Each
    table was built afresh and its keyed words written one by one before: with this and the changes beside
    it, the parent's draw of a grouped GEMM call went from 0.67-0.91 ms (docs/results.md run 28) to 0.34
    (run 29 call 6)."""

    def __init__(self, tables: list[Table]) -> None:
        self.tables = tables
        self.sizes = [table.numel() for table, _, _ in tables]
        self.template = np.concatenate([np.asarray(rows, dtype=np.int64).reshape(-1) for _, rows, _ in tables]
                                       ) if tables else np.zeros(0, dtype=np.int64)
        starts = np.cumsum([0, *self.sizes])
        self.keyed = [(int(start) + offset // 8, name)
                      for start, (_, _, keyed) in zip(starts, tables) for offset, name in keyed.items()]
        device = tables[0][0].device if tables else torch.device("cpu")
        self.host = torch.empty(len(self.template), dtype=torch.int64, pin_memory=device.type == "cuda")
        self.copied = torch.cuda.Event() if device.type == "cuda" else None  # the last copy out of ``host``

    def contents(self, seed: int) -> np.ndarray:
        """Every table's words under ``seed``, end to end."""
        words = self.template.copy()
        for at, name in self.keyed:
            words[at], words[at + 1] = counter_rng.stream_keys(seed, name)  # 32-bit keys: int64 holds them
        return words

    def write(self, seed: int) -> None:
        """Queue every table's contents under ``seed`` on the current stream (not waited for)."""
        if not self.tables:
            return
        if self.copied is not None:
            self.copied.synchronize()  # the last replay's copy has read ``host`` (long since, in practice)
        self.host.numpy()[:] = self.contents(seed)
        device = self.tables[0][0].device
        staged = self.host.to(device, non_blocking=True) if device.type == "cuda" else self.host
        if self.copied is not None:
            self.copied.record()
        for (table, _, _), piece in zip(self.tables, staged.split(self.sizes)):
            table.view(-1).copy_(piece)


class CapturedDraw(NamedTuple):
    """The graph, the tensors it draws into (its pool holds them), the tables it reads (kernel_tables.TableCapture),
    and, for whoever replays it through ``replay``, their writer (None: one made per replay)."""

    graph: Any
    data: Any
    tables: list[Table]
    writer: TableWriter | None = None


def capture_draw(draw: Callable[[], Any], device: torch.device, keep_graph: bool = False,
                 error_mode: str = "global", pool: Any = None) -> CapturedDraw:
    """Capture ``draw()`` on ``device``, whose kernels must already be compiled (no compiler runs inside
    a capture: run the draw once eagerly first). ``keep_graph``: keep the raw graph for another owner
    to instantiate (the worker's core), instead of torch's executable one; ``error_mode``: torch's
    ``capture_error_mode`` ("thread_local" where other threads of the process may use CUDA meanwhile);
    ``pool``: a memory pool shared with other graphs (torch.cuda.graph_pool_handle), None for its own."""
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph(keep_graph=keep_graph)
    with kernel_tables.captured_tables() as capture, torch.cuda.graph(graph, pool=pool, capture_error_mode=error_mode):
        data = draw()
    return CapturedDraw(graph, data, capture.tables)


def replay(captured: CapturedDraw, seed: int) -> Any:
    """``captured``'s tensors holding the draw under ``seed`` (queued on the current stream): every table
    written from one pinned copy, then the graph. Valid until the next replay of the same graph."""
    (captured.writer or TableWriter(captured.tables)).write(seed)
    captured.graph.replay()
    return captured.data
