"""Graph replay, the clock the harness is held against: each flushed call timed inside one CUDA graph.

For a shape: POOL input sets are drawn (fresh inputs, as the harness gives) and one CUDA graph holds
GROUPS groups of [read a 2x-L2 buffer, mark, custom_kernel(inputs_i), mark]; after each of REPLAYS
replays every group's pair of marks is read. Nothing is subtracted: the flush lies outside every
pair, so its own time and its variance (a 2x-L2 read, about 35 us on an H100) never enter a reading
(the clock this replaced timed flush + call and subtracted a flush-only graph, and read 2.33 and 3.78
us for one 2 us rung in two runs: docs/timing.md, "The residual error bound"). Two kinds of mark,
each in its own graph so that neither clock sees the other's nodes:

- events: event-record nodes (``torch.cuda.Event(external=True)`` captured in the graph): the
  reference reading, the median over every timed call;
- stamps: a one-thread kernel writing %globaltimer (harness.sol.globaltimer): a reading with no
  event in it. Its two marks are kernels, so each pair also holds one kernel boundary: the pair with
  nothing between (``Floors.stamps_nothing_us``) is taken off. A trimmed mean, not a median: the
  timer may tick coarser than a short kernel, and over many calls the tick's phase averages out.

``Floors`` (once per clock) reads each pair with nothing and with an empty kernel between its marks:
what the marks themselves cost, and how long an isolated empty launch reads on this clock.
The flush reads, as the core's does (docs/timing.md, "The flush decided by measurement"). Nothing
of the harness's timer, worker or core is used. Used by ``calibrate`` (harness.sol.fidelity) and
scripts/graph_replay.py. GPU only; only the harness's own files are loaded here, never a contestant's.
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POOL = 4
ROUNDS = 8
GROUPS = ROUNDS * POOL
"""Timed calls in one graph: every input set ROUNDS times."""
REPLAYS = 9
TRIM = 0.1
"""The stamps' mean drops this share of the readings at each end (a call the GPU preempted, say)."""


@dataclass(frozen=True)
class Reading:
    """One shape by the replay clock, in us."""

    events_us: float
    events_p10_us: float
    events_p90_us: float
    stamps_us: float
    calls: int


@dataclass(frozen=True)
class Floors:
    """Each clock's pair of marks with nothing, and with an empty kernel, between them, in us."""

    events_nothing_us: float
    events_empty_us: float
    stamps_nothing_us: float
    stamps_empty_us: float


def quantile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank quantile (no interpolation: a reading that was measured)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def trimmed_mean(values: Sequence[float], trim: float = TRIM) -> float:
    ordered = sorted(values)
    cut = int(trim * len(ordered))
    return statistics.fmean(ordered[cut:len(ordered) - cut] or ordered)


def stamp_pairs_us(slots: Sequence[int], groups: int) -> list[float]:
    """Group i's stamps are slots 2i (before the call) and 2i+1 (after): their differences, ns to us."""
    return [(slots[2 * i + 1] - slots[2 * i]) / 1e3 for i in range(groups)]


def reading_of(event_us: Sequence[float], stamp_us: Sequence[float], stamps_floor_us: float) -> Reading:
    """Every timed call's event time and stamp difference, summarised; the stamps' floor taken off."""
    return Reading(statistics.median(event_us), quantile(event_us, 0.1), quantile(event_us, 0.9),
                   trimmed_mean(stamp_us) - stamps_floor_us, len(event_us))


def capture_groups(calls: Sequence[Callable[[], Any]], flush: Callable[[], Any],
                   before: Callable[[int], Any], after: Callable[[int], Any]) -> None:
    """The graph's body: per call, the flush, the opening mark, the call, the closing mark."""
    for index, call in enumerate(calls):
        flush()
        before(index)
        call()
        after(index)


class ReplayClock:
    """Times flushed calls by event pairs and by %globaltimer stamps inside CUDA graphs (one per clock)."""

    def __init__(self, flush: Callable[[], Any] | None = None) -> None:
        import torch

        from harness.sol.globaltimer import Stamper

        self.flush = flush or reading_flush()
        try:
            self._starts = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(GROUPS)]
            self._ends = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(GROUPS)]
        except TypeError as error:  # a torch older than event-record nodes in captured graphs
            raise RuntimeError(f"torch {torch.__version__} has no torch.cuda.Event(external=True), which the replay "
                               "clock needs to time inside a graph: install a newer torch") from error
        self._stamper = Stamper(2 * GROUPS)
        self._floors: Floors | None = None

    def _replayed(self, calls: Sequence[Callable[[], Any]], before: Callable[[int], Any],
                  after: Callable[[int], Any], read: Callable[[], list[float]]) -> list[float]:
        import torch

        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):  # JIT and allocations happen before capture
            capture_groups(calls, self.flush, before, after)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            capture_groups(calls, self.flush, before, after)
        readings: list[float] = []
        for _ in range(REPLAYS):
            graph.replay()
            torch.cuda.synchronize()
            readings += read()
        return readings

    def event_times_us(self, calls: Sequence[Callable[[], Any]]) -> list[float]:
        pairs = list(zip(self._starts, self._ends))[:len(calls)]
        return self._replayed(calls, lambda i: self._starts[i].record(), lambda i: self._ends[i].record(),
                              lambda: [start.elapsed_time(end) * 1e3 for start, end in pairs])

    def stamp_times_us(self, calls: Sequence[Callable[[], Any]]) -> list[float]:
        stamper = self._stamper
        return self._replayed(calls, lambda i: stamper.mark(2 * i), lambda i: stamper.mark(2 * i + 1),
                              lambda: stamp_pairs_us(stamper.read(), len(calls)))

    def floors(self) -> Floors:
        """Measured once per clock: the marks with nothing, and with torch's empty sleep kernel, between."""
        import torch

        if self._floors is None:
            nothing, empty = [lambda: None] * GROUPS, [lambda: torch.cuda._sleep(0)] * GROUPS
            self._floors = Floors(statistics.median(self.event_times_us(nothing)),
                                  statistics.median(self.event_times_us(empty)),
                                  trimmed_mean(self.stamp_times_us(nothing)), trimmed_mean(self.stamp_times_us(empty)))
        return self._floors

    def time(self, kernel: Callable[[Any], Any], inputs: list[Any]) -> Reading:
        calls = [lambda data=data: kernel(data) for _ in range(ROUNDS) for data in inputs]
        return reading_of(self.event_times_us(calls), self.stamp_times_us(calls), self.floors().stamps_nothing_us)


def load_shipped(path: Path) -> Callable[[Any], Any]:
    """A shipped file's custom_kernel, imported beside the contest modules it expects (task, utils, ...)."""
    from harness.contract.task_spec import load_task
    from harness.worker import contest_modules

    problem = importlib.import_module(f"problems.{path.parent.name}.reference")
    contest_modules.install(problem, load_task(path.parent.name).task_py)
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"baseline_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel


def graph_per_call_us(kernels: list[Callable[[], Any]], replays: int = 10) -> float:
    """Median over replays of (one graph of len(kernels) calls) / len(kernels): back-to-back throughput,
    for scripts/timing_validation.py (an unflushed kernel, where no flush is subtracted)."""
    import torch

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for kernel in kernels:
            kernel()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for kernel in kernels:
            kernel()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(200_000)  # the GPU is busy when the start event is queued
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / len(kernels))
    return statistics.median(times)


def reading_flush() -> Callable[[], None]:
    """Empties the L2 of earlier lines by reading a buffer twice its size: clean lines only."""
    import torch

    buffer = torch.zeros(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    total = torch.zeros((), dtype=torch.int64, device="cuda")
    return lambda: torch.sum(buffer, dim=0, dtype=torch.int64, out=total)


def shape_inputs(problem: str, case: dict[str, Any]) -> list[Any]:
    """POOL input sets of one shape on the GPU, each from its own seed."""
    reference = importlib.import_module(f"problems.{problem}.reference")
    return [reference.generate_input(**{**case, "seed": case["seed"] + i}, device="cuda") for i in range(POOL)]
