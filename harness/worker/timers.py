"""How one call is timed inside the worker when the compiled core is not there (unranked runs).

CUDA: the L2 is flushed by reading a buffer twice its size (clean lines only, as the compiled core
and the replay clock flush: docs/timing.md) and persisting lines are reset, then a
sleep kernel is queued so that the host's launch of the submission happens while the GPU is
still busy; a device event pair brackets the call, so host launch latency stays outside the
measurement (measured on the lent H100, docs/timing.md: without the queued sleep a ~4 us kernel
read 17-23 us).

CPU: wall clock around the call; such times are marked not rankable.

On a GPU with the compiled core (``harness.worker.sealed_core``) none of this Python times
anything. ``CudaTimer`` remains for unranked GPU runs on an install without a C compiler.

Every function here captures the originals of what it calls at import time, before any
submission is imported, so a submission that monkeypatches torch.cuda.Event or
time.perf_counter does not change what the harness measures (and is caught by
``harness.worker.integrity_guard``).
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

_perf_counter = time.perf_counter
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed_time = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize
_sleep = torch.cuda._sleep
_read_all = torch.Tensor.amax  # a reduction: every byte of the buffer read, nothing of it written

SLEEP_CYCLES_PER_US = 2000
"""Cycles of torch.cuda._sleep per microsecond: at most 2 GHz on the GPUs we target, so a
requested sleep lasts at least as long as asked."""

CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
OVERHEAD_SLEEP_US = 20.0
"""The sleep queued ahead of each call that measures the event overhead."""


def _cudart() -> Any | None:
    """The CUDA runtime library torch loaded, for the calls torch does not expose."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class CudaTimer:
    """Times single calls on the current CUDA device (see the module docstring).

    An event pair around one kernel also counts the GPU front end's dispatch and drain of that
    kernel (~2 us on an H100), which back-to-back kernels in a CUDA graph overlap. The timer
    measures that fixed cost once, as the event time of a one-element kernel minus its
    per-kernel time inside a replayed graph, and subtracts it from every call
    (``subtract_overhead``), so that a call's time matches what it costs in a stream of work.
    """

    def __init__(self, device: torch.device, subtract_overhead: bool = True) -> None:
        l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
        self._flush_buffer = torch.empty(max(2 * l2_bytes, 1 << 20), dtype=torch.uint8, device=device)
        self._cudart = _cudart()
        self.persisting_l2_reset = self._cudart is not None
        self.overhead_us = self.measure_overhead_us(device) if subtract_overhead else 0.0
        self.method = "cuda-event per call, L2 flushed, queued sleep"
        if subtract_overhead:
            self.method += f", minus {self.overhead_us:.2f} us measured event overhead"

    def measure_overhead_us(self, device: torch.device, calls: int = 100) -> float:
        """Event time of a trivial kernel minus its per-kernel time in a replayed CUDA graph."""
        scratch = torch.zeros(1, device=device)

        def trivial() -> None:
            scratch.add_(1.0)

        self.overhead_us = 0.0
        event_us = statistics.median(self._raw_elapsed_us(trivial) for _ in range(calls))
        stream = torch.cuda.Stream(device)
        with torch.cuda.stream(stream):
            trivial()  # warm-up outside capture, as CUDA graphs require
        _synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                trivial()
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        graph.replay()
        _sleep(int(OVERHEAD_SLEEP_US * SLEEP_CYCLES_PER_US))
        _event_record(start)
        graph.replay()
        _event_record(end)
        _synchronize()
        graph_us = _event_elapsed_time(start, end) * 1e3 / calls
        return max(0.0, event_us - graph_us)

    def _raw_elapsed_us(self, call: Callable[[], Any]) -> float:
        _, elapsed_us, _ = self.time_call(call, OVERHEAD_SLEEP_US)
        return elapsed_us()

    def _reset_persisting_l2(self) -> None:
        if self._cudart is not None:
            self._cudart.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
            self._cudart.cudaCtxResetPersistingL2Cache()

    def time_call(self, call: Callable[[], Any], sleep_us: float) -> tuple[Any, Callable[[], float], float]:
        """Run ``call`` once: (its result, a function giving the device time in us, host time in us).

        The device time is read later, so that the caller can first queue a snapshot of the
        outputs right behind the end event (work left running on another stream shows there).
        """
        _synchronize()
        self._reset_persisting_l2()
        _read_all(self._flush_buffer)
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _sleep(int(sleep_us * SLEEP_CYCLES_PER_US))
        _event_record(start)
        host_start = _perf_counter()
        result = call()
        host_us = (_perf_counter() - host_start) * 1e6
        _event_record(end)

        def elapsed_us() -> float:
            _synchronize()
            return _event_elapsed_time(start, end) * 1e3 - self.overhead_us

        return result, elapsed_us, host_us


class CpuTimer:
    """Wall clock around one call (CPU work is synchronous)."""

    method = "wall clock (cpu, not rankable)"
    persisting_l2_reset = False

    def time_call(self, call: Callable[[], Any], sleep_us: float) -> tuple[Any, Callable[[], float], float]:
        start = _perf_counter()
        result = call()
        wall_us = (_perf_counter() - start) * 1e6
        return result, lambda: wall_us, wall_us


class StepClock:
    """Seconds per named step of a longer task (the worker's Start), each from the mark before: the
    worker's own account, shown beside the parent's ``worker_start`` and never trusted."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = _perf_counter()

    def mark(self, step: str) -> None:
        now = _perf_counter()
        self.seconds[step] = round(now - self._last, 4)
        self._last = now
