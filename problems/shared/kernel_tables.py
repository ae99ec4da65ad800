"""The small device tables through which a draw's Triton kernels find their tensors, and their capture.

Each kernel of a draw (the counter generator's hash and codes kernels, the permute kernel) serves all of its
tensors in one launch: a table on the device holds one row per tensor (its address, its size, for the hash its
stream's two keys), and the grid spans the largest tensor. Inside a CUDA graph capture a copy from host
memory would replay whatever that memory holds at replay, so under ``captured_tables`` the tables are left
unwritten and recorded; whoever replays the graph writes them first (problems/shared/draw_graph.py,
harness/worker/drawn_inputs.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch


@dataclass
class TableCapture:
    """The kernel tables of a draw being captured into a CUDA graph: each one allocated on the device
    (in the graph's pool) but not written by the graph, with the rows it must hold and, per hash-table
    row, the byte offset of its keys and its stream's name. Whoever replays the graph writes every table
    first, the keys from the call's seed (harness/worker/drawn_inputs.py: the worker's core does)."""

    tables: list[tuple[torch.Tensor, list[tuple[int, ...]], dict[int, str]]] = field(default_factory=list)


_capturing: list[TableCapture] = []


@contextlib.contextmanager
def captured_tables() -> Iterator[TableCapture]:
    """Record the draws' kernel tables instead of copying them to the device (inside a graph capture,
    where a copy from host memory would replay whatever that memory holds then)."""
    capture = TableCapture()
    _capturing.append(capture)
    try:
        yield capture
    finally:
        _capturing.remove(capture)


def device_table(rows: list[tuple[int, ...]], device: torch.device,
                 keyed: dict[int, str] | None = None) -> torch.Tensor:
    """A kernel's table of addresses and counts on ``device``: pinned and copied asynchronously, so a
    draw never waits for work already queued on the GPU; under ``captured_tables``, left unwritten and
    recorded (``keyed``: the byte offsets of the seed's keys and their stream names). Every table a
    draw's kernels read comes from here: a table made elsewhere would replay its capture-time contents."""
    host = torch.tensor(rows, dtype=torch.int64)
    if _capturing:
        table = torch.empty_like(host, device=device)
        _capturing[-1].tables.append((table, rows, keyed or {}))
        return table
    return host.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else host


def launch_grid(rows: list[tuple[int, ...]], count_column: int, block: int) -> tuple[int, int]:
    """(programs for the longest tensor, tensors), each program taking ``block`` of its tensor's count (column
    ``count_column`` of its row): the shorter tensors' extra programs return at once."""
    return -(-max(row[count_column] for row in rows) // block), len(rows)


def on_device(device: torch.device) -> contextlib.AbstractContextManager:
    """Triton launches on the current CUDA device: make it ``device`` (no-op on the CPU)."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
