"""A problem's input draw captured once into a CUDA graph, then replayed under any seed: its tables written first.

Every draw goes through the counter generator (counter_rng), whose kernels read their streams' keys in
small device tables. Under ``counter_rng.captured_tables`` a capture leaves those tables unwritten
and records what they must hold; a replay writes them for the call's seed (``counter_rng.seeded_table``)
and replays the graph, whose tensors (fixed addresses in the graph's pool) then hold that seed's draw,
bit for bit the problem's ``generate_input`` (the same code ran, the same kernels replay). Used by the
worker (harness/worker/drawn_inputs.py: its compiled core replays the graph) and by the parent
(harness/judge/verdict/graph_draws.py: torch replays it). The tensors are reused: each replay overwrites
the last one's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from problems.shared import counter_rng

Table = tuple[torch.Tensor, list[tuple[int, ...]], dict[int, str]]


class CapturedDraw(NamedTuple):
    """The graph, the tensors it draws into (its pool holds them), the tables it reads (counter_rng.TableCapture)."""

    graph: Any
    data: Any
    tables: list[Table]


def capture_draw(draw: Callable[[], Any], device: torch.device, keep_graph: bool = False,
                 error_mode: str = "global", pool: Any = None) -> CapturedDraw:
    """Capture ``draw()`` on ``device``, whose kernels must already be compiled (no compiler runs inside
    a capture: run the draw once eagerly first). ``keep_graph``: keep the raw graph for another owner
    to instantiate (the worker's core), instead of torch's executable one; ``error_mode``: torch's
    ``capture_error_mode`` ("thread_local" where other threads of the process may use CUDA meanwhile);
    ``pool``: a memory pool shared with other graphs (torch.cuda.graph_pool_handle), None for its own."""
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph(keep_graph=keep_graph)
    with counter_rng.captured_tables() as capture, torch.cuda.graph(graph, pool=pool, capture_error_mode=error_mode):
        data = draw()
    return CapturedDraw(graph, data, capture.tables)


def replay(captured: CapturedDraw, seed: int) -> Any:
    """``captured``'s tensors holding the draw under ``seed`` (queued on the current stream): every table
    written from one pinned copy, then the graph. Valid until the next replay of the same graph."""
    contents = [counter_rng.seeded_table(rows, keyed, seed).view(-1) for _, rows, keyed in captured.tables]
    if contents:
        staged = torch.cat(contents)
        if staged.device != (device := captured.tables[0][0].device):  # CUDA: a few hundred bytes, not waited for
            staged = staged.pin_memory().to(device, non_blocking=True)
        for (table, _, _), piece in zip(captured.tables, staged.split([c.numel() for c in contents])):
            table.view(-1).copy_(piece)
    captured.graph.replay()
    return captured.data
