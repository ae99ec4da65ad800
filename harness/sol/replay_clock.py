"""Graph replay, the reference clock: each flushed call timed by %globaltimer stamps inside one CUDA graph.

For a shape: POOL input sets are drawn (fresh inputs, as the harness gives) and one CUDA graph holds
GROUPS groups of [read a 2x-L2 buffer, stamp, stamp, custom_kernel(inputs_i), stamp]; after each of
REPLAYS replays every group's three stamps are read. The flush lies outside every pair, so its own time
and its variance (a 2x-L2 read, about 35 us on an H100) never enter a reading. A stamp is a one-thread
kernel writing %globaltimer (harness.sol.globaltimer): a pair also holds one kernel boundary of its own,
so each group's first two stamps (nothing between them) are its floor, taken off its call. The floor is
measured in the same replay as the call it is taken from: measured apart, in a graph of its own, it
read 1.13 us in one process and 0.78 us in another on the same H100 while the calls' stamps read the
same (docs/timing.md, "The floor measured beside each call"). A trimmed mean, not a
median: the timer may tick coarser than a short kernel, and over many calls the tick's phase averages
out. Event-record nodes were the first reference and were dropped (docs/timing.md, "The reference
clock, decided"): on an H100 each in-graph event pair read 2.4-2.7 us above the stamps on every single kernel.

**The stream replay** (``ReplayClock(stream=True)``, docs/timing.md "The stream replay"): the same groups,
stamps and arithmetic, but queued eagerly on one stream, as the harness and the contest's evaluator run
a call, instead of captured: a graph starts a call's next kernel node about 1 us sooner than a stream
starts its next queued kernel, so on calls of several kernels the graph reads about 1 us per extra
kernel under the harness. So that the host's launches never pace the GPU, every run begins with a hold
(globaltimer's spin kernel) three times as long as the host's warm queueing of every group, doubled
while the host's queueing outlasts it; the stamps are read after a synchronize, as the graph's are.
Its floor (two stamps back to back on the stream) holds one stream launch, so each reading carries one
stream launch over the graph's: scripts/graph_replay.py takes that off (the two clocks' empty-kernel
readings apart) before holding it against the harness (docs/timing.md, run 17).

``Floors`` reads the pair with nothing and with an empty kernel between its stamps: what the stamps
cost, and what one empty kernel reads on this clock (scripts/ncu_times.py holds ncu's reading of the
same kernel against it). The flush reads, as the core's does (docs/timing.md, "The flush decided by
measurement"). Nothing of the harness's timer, worker or core is used. Used by ``calibrate``
(harness.sol.fidelity) and scripts/graph_replay.py. GPU only; only the harness's own files are
loaded here, never a contestant's.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import statistics
import sys
import time
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
HOLD_FACTOR = 3
"""The stream replay's first hold: this many times the host's warm queueing of every group."""
HOLD_MIN_NS, HOLD_MAX_NS = 1_000_000, 200_000_000
"""The hold's bounds (1 ms, 200 ms): the spin never outlasts the longest."""
HOLD_SLACK_NS = 100_000
"""A hold must outlast the host's queueing by this much (a launch reaches the GPU a little after the host returns)."""


@dataclass(frozen=True)
class Reading:
    """One shape by the replay clock, in us: the trimmed mean and the spread of every call's stamps, floor off."""

    us: float
    p10_us: float
    p90_us: float
    calls: int
    floor_us: float = 0.0
    """The trimmed mean of the floors taken off (each group's two back-to-back stamps)."""
    median_us: float | None = None
    """The calls' median: the statistic the harness reports, so the two clocks can be held like with like."""


@dataclass(frozen=True)
class Floors:
    """The stamp pair with nothing, and with one empty kernel, between its two stamps, in us."""

    nothing_us: float
    empty_us: float
    tick_ns: int = 0
    """The finest step of %globaltimer the stamps showed (a coarse tick makes short readings jitter)."""

    @property
    def empty_kernel_us(self) -> float:
        """What an empty kernel reads on this clock: the reading a call of one empty kernel gets."""
        return self.empty_us - self.nothing_us


def quantile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank quantile (no interpolation: a reading that was measured)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def trimmed_mean(values: Sequence[float], trim: float = TRIM) -> float:
    ordered = sorted(values)
    cut = int(trim * len(ordered))
    return statistics.fmean(ordered[cut:len(ordered) - cut] or ordered)


def group_stamps_us(slots: Sequence[int], groups: int) -> tuple[list[float], list[float]]:
    """(each group's floor, each group's call) in us: group i's stamps are slots 3i and 3i+1 (back to back,
    nothing between) and 3i+2 (after the call); the floor is 3i+1 less 3i, the call 3i+2 less 3i+1."""
    floors = [(slots[3 * i + 1] - slots[3 * i]) / 1e3 for i in range(groups)]
    calls = [(slots[3 * i + 2] - slots[3 * i + 1]) / 1e3 for i in range(groups)]
    return floors, calls


def timer_tick_ns(slots: Sequence[int]) -> int:
    """The finest step the stamps show: the greatest common divisor of their differences (0 if none)."""
    ordered = sorted(set(slots))
    return math.gcd(*(b - a for a, b in itertools.pairwise(ordered))) if len(ordered) > 1 else 0


def reading_of(floor_us: Sequence[float], call_us: Sequence[float]) -> Reading:
    """Every timed call's stamps less its own group's floor (measured in the same replay), summarised."""
    calls = [call - floor for call, floor in zip(call_us, floor_us, strict=True)]
    return Reading(trimmed_mean(calls), quantile(calls, 0.1), quantile(calls, 0.9), len(calls), trimmed_mean(floor_us),
                   statistics.median(calls))


def capture_groups(calls: Sequence[Callable[[], Any]], flush: Callable[[], Any], mark: Callable[[int], Any]) -> None:
    """The graph's body: per call, the flush, two marks back to back (the floor), the call, the closing mark."""
    for index, call in enumerate(calls):
        flush()
        mark(3 * index)
        mark(3 * index + 1)
        call()
        mark(3 * index + 2)


def queue_groups(hold: Callable[[], Any], calls: Sequence[Callable[[], Any]], flush: Callable[[], Any],
                 mark: Callable[[int], Any]) -> None:
    """The stream replay's body: the hold, then the graph's groups, queued eagerly behind it."""
    hold()
    capture_groups(calls, flush, mark)


def first_hold_ns(queue_s: float) -> int:
    """The hold for a body the host queued in queue_s seconds (warm): HOLD_FACTOR times that, bounded."""
    return int(min(HOLD_MAX_NS, max(HOLD_MIN_NS, HOLD_FACTOR * queue_s * 1e9)))


def queue_covered(queue: Callable[[int], float], hold_ns: int) -> int:
    """Queues the body behind a hold of hold_ns (``queue`` returns the host's queueing time, ns, from before
    the hold's launch), again behind one twice as long while the host's queueing outlasted it: the hold
    began no earlier than its launch, so a body queued inside it found the GPU still spinning, and every
    call starts when the one before it ends, not when the host gets to it. A body queued again lies behind
    the one before in the stream and rewrites its stamps. Returns the hold that covered it."""
    while queue(hold_ns) + HOLD_SLACK_NS >= hold_ns:
        if hold_ns >= HOLD_MAX_NS:
            raise RuntimeError(f"the host queued the groups in longer than the longest hold ({HOLD_MAX_NS / 1e6:.0f} "
                               "ms): a call that synchronises with the GPU cannot be timed on the stream replay")
        hold_ns = min(HOLD_MAX_NS, 2 * hold_ns)
    return hold_ns


class ReplayClock:
    """Times flushed calls by %globaltimer stamps around each call inside one CUDA graph, or, with
    ``stream=True`` (the stream replay), around each call queued eagerly on one stream behind a hold."""

    def __init__(self, flush: Callable[[], Any] | None = None, stream: bool = False) -> None:
        from harness.sol.globaltimer import Stamper

        self.flush = flush or reading_flush()
        self.stream = stream
        self._stamper = Stamper(3 * GROUPS)
        self._floors: Floors | None = None
        self.tick_ns = 0
        """The finest step of %globaltimer seen in the last graph's stamps."""
        self.hold_ns = 0
        """The stream replay's last hold (0 for the graph)."""

    def stamp_times_us(self, calls: Sequence[Callable[[], Any]]) -> tuple[list[float], list[float]]:
        """(each group's floor, each call's stamps), raw, over REPLAYS runs of one body (graph or stream)."""
        import torch

        stream = torch.cuda.Stream()
        for _ in range(2 if self.stream else 1):  # JIT and allocations in the first; a second: the host's warm pace
            started = time.perf_counter()
            with torch.cuda.stream(stream):
                capture_groups(calls, self.flush, self._stamper.mark)
            queue_s = time.perf_counter() - started
            torch.cuda.synchronize()
        run = self._stream_run(calls, stream, queue_s) if self.stream else self._graph_run(calls)
        floors: list[float] = []
        readings: list[float] = []
        ticks = []
        for _ in range(REPLAYS):
            run()
            torch.cuda.synchronize()
            slots = self._stamper.read()[: 3 * len(calls)]
            floor, reading = group_stamps_us(slots, len(calls))
            floors += floor
            readings += reading
            ticks.append(timer_tick_ns(slots))
        self.tick_ns = math.gcd(*ticks)
        return floors, readings

    def _graph_run(self, calls: Sequence[Callable[[], Any]]) -> Callable[[], Any]:
        import torch

        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            capture_groups(calls, self.flush, self._stamper.mark)
        return graph.replay

    def _stream_run(self, calls: Sequence[Callable[[], Any]], stream: Any, queue_s: float) -> Callable[[], None]:
        """One run queues the hold and every group on ``stream``; the hold grows while it does not cover them."""
        import torch

        def queue(hold_ns: int) -> float:
            started = time.perf_counter()
            with torch.cuda.stream(stream):
                queue_groups(lambda: self._stamper.hold(hold_ns), calls, self.flush, self._stamper.mark)
            return (time.perf_counter() - started) * 1e9

        def run() -> None:
            self.hold_ns = queue_covered(queue, self.hold_ns)

        self.hold_ns = first_hold_ns(queue_s)
        return run

    def floors(self) -> Floors:
        """Measured once per clock: the stamps with nothing, and with the stamp module's empty kernel, between."""
        if self._floors is None:
            nothing, empty = self.stamp_times_us([self._stamper.empty] * GROUPS)
            self._floors = Floors(trimmed_mean(nothing), trimmed_mean(empty), self.tick_ns)
        return self._floors

    def time(self, kernel: Callable[[Any], Any], inputs: list[Any]) -> Reading:
        calls = [lambda data=data: kernel(data) for _ in range(ROUNDS) for data in inputs]
        return reading_of(*self.stamp_times_us(calls))


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
