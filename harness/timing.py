"""How one call is timed, inside the worker, and the rule that decides how many calls to time.

CUDA: the L2 is flushed by writing a buffer twice its size and persisting lines are reset, then a
sleep kernel is queued so that the host's launch of the submission happens while the GPU is
still busy; a device event pair brackets the call, so host launch latency stays outside the
measurement (device-notes.md: without the queued sleep a ~4 us kernel read 17-23 us).

CPU: wall clock around the call; such times are marked not rankable.

On a GPU with the compiled core (harness._sealed, built by the install) none of this Python
times anything: ``SealedTimer`` hands the whole call to C (harness/csrc/sealed.c), which owns the
flush buffer, events, sleep kernel, event overhead and the bound custom_kernel, and returns each
result with a MAC the parent checks (harness.seal). CudaTimer remains for unranked GPU runs on an
install without a C compiler.

Every function here captures the originals of what it calls at import time, before any
submission is imported, so a submission that monkeypatches torch.cuda.Event or
time.perf_counter does not change what the harness measures (and is caught by
``harness.integrity``).
"""

from __future__ import annotations

import ctypes
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from harness.results import TimingStats

try:
    from harness import _sealed
except ImportError:  # built by `pip install -e .` where a C compiler exists (setup.py)
    _sealed = None

SEALED_MISSING = (
    "the compiled timing core harness._sealed is not built: install a C compiler and the Python headers "
    "(apt-get install gcc python3-dev) and run `pip install -e .` again"
)

_perf_counter = time.perf_counter
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed_time = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize
_sleep = torch.cuda._sleep

SLEEP_CYCLES_PER_US = 2000
"""Cycles of torch.cuda._sleep per microsecond: at most 2 GHz on the GPUs we target, so a
requested sleep lasts at least as long as asked."""

CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
MIN_QUEUED_SLEEP_US = 20.0
MAX_QUEUED_SLEEP_US = 50_000.0
EXPOSED_RETRIES = 8
"""Timed calls a case may discard as exposed before it accepts them (a call that waits for the
GPU inside custom_kernel is exposed at any sleep: its time then includes that wait, as it should)."""


@dataclass
class QueuedSleep:
    """The sleep queued ahead of each timed call, lengthened whenever a call comes back exposed.

    A call is exposed when the GPU reached the start event before the host had queued all of it
    (the compiled core checks the event right after custom_kernel returns): host launch time may
    then lie between the events. Such a time is discarded and the sleep raised above twice the
    call's host time, up to ``EXPOSED_RETRIES`` times a case. Past that the calls are exposed at
    any sleep (they wait for the GPU inside custom_kernel): their times count, and the sleep goes
    back to its first length, since a longer one would only cost wall time.
    """

    us: float
    exposed: int = 0
    first_us: float = field(init=False)

    def __post_init__(self) -> None:
        self.first_us = self.us

    @classmethod
    def after_warmup(cls, host_us: list[float]) -> QueuedSleep:
        """Twice the slowest warm-up launch (the first call's JIT excluded) plus the floor."""
        return cls(min(MAX_QUEUED_SLEEP_US, max(MIN_QUEUED_SLEEP_US, 2 * max(host_us) + MIN_QUEUED_SLEEP_US)))

    def counts(self, host_us: float, exposed: bool) -> bool:
        """Whether a call's time counts; an exposed one lengthens the sleep (and does not count)."""
        if not exposed:
            return True
        self.exposed += 1
        if self.exposed > EXPOSED_RETRIES:
            self.us = self.first_us
            return True
        self.us = min(MAX_QUEUED_SLEEP_US, max(2 * self.us, 2 * host_us + MIN_QUEUED_SLEEP_US))
        return False

    def summary(self) -> str:
        """What the exposed calls did to the case, for its reason line."""
        text = f"{self.exposed} call(s) exposed (the host's launch outran the queued sleep)"
        if self.exposed <= EXPOSED_RETRIES:
            return f"{text}, sleep raised to {self.us:.0f} us"
        return f"{text}; exposed at any sleep (custom_kernel waits for the GPU), counted after {EXPOSED_RETRIES}"


@dataclass(frozen=True)
class StoppingRule:
    """When to stop timing a case. Times are per call; the budget counts the whole loop.

    Stop once at least ``min_runs`` calls were timed and the standard error of the mean is
    below ``max_relative_error`` of the mean; or at ``max_runs``; or when ``budget_s`` of wall
    time has gone (fresh inputs are generated for every call, which dominates for small kernels).
    """

    min_runs: int = 10
    max_runs: int = 100
    max_relative_error: float = 0.005
    budget_s: float = 15.0

    def done(self, samples_us: list[float], elapsed_s: float) -> bool:
        runs = len(samples_us)
        if runs >= self.max_runs or (runs >= 2 and elapsed_s >= self.budget_s):
            return True
        if runs < self.min_runs:
            return False
        mean = statistics.fmean(samples_us)
        error = statistics.stdev(samples_us) / math.sqrt(runs)
        return mean > 0 and error / mean < self.max_relative_error


BENCHMARK_RULE = StoppingRule(budget_s=15.0)
LEADERBOARD_RULE = StoppingRule(min_runs=100, max_runs=200, max_relative_error=0.002, budget_s=15.0)
CPU_RULE = StoppingRule(min_runs=3, max_runs=10, max_relative_error=0.02, budget_s=10.0)


def summarize(samples_us: list[float], method: str) -> TimingStats:
    ordered = sorted(samples_us)

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return TimingStats(
        median_us=statistics.median(ordered),
        mean_us=statistics.fmean(ordered),
        std_us=statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        min_us=ordered[0],
        max_us=ordered[-1],
        p10_us=quantile(0.1),
        p90_us=quantile(0.9),
        runs=len(ordered),
        method=method,
    )


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
        _sleep(int(MIN_QUEUED_SLEEP_US * SLEEP_CYCLES_PER_US))
        _event_record(start)
        graph.replay()
        _event_record(end)
        _synchronize()
        graph_us = _event_elapsed_time(start, end) * 1e3 / calls
        return max(0.0, event_us - graph_us)

    def _raw_elapsed_us(self, call: Callable[[], Any]) -> float:
        _, elapsed_us, _ = self.time_call(call, MIN_QUEUED_SLEEP_US)
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
        self._flush_buffer.zero_()
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


def sealed_available() -> bool:
    return _sealed is not None


def _sealed_hooks() -> dict[str, Any]:
    """The torch entry points the core calls to read outputs, captured before the submission runs."""
    from torch.utils._device import DeviceContext

    storage = torch.UntypedStorage
    return {
        "tensor_type": torch.Tensor,
        "dtype": torch.Tensor.__dict__.get("dtype") or torch._C.TensorBase.__dict__["dtype"],
        "is_cuda": torch._C.TensorBase.__dict__["is_cuda"].__get__,
        "untyped_storage": torch._C.TensorBase.untyped_storage,
        "storage_data_ptr": storage.data_ptr,
        "storage_nbytes": storage.nbytes,
        "storage_offset": torch._C.TensorBase.storage_offset,
        "size": torch._C.TensorBase.size,
        "stride": torch._C.TensorBase.stride,
        "function_stack_len": torch._C._len_torch_function_stack,
        "dispatch_stack_len": torch._C._len_torch_dispatch_stack,
        "function_stack_at": torch._C._get_function_stack_at,
        "device_context": DeviceContext,
        "device_context_tf": DeviceContext.__torch_function__,
    }


class SealedTimer:
    """The worker's handle on the compiled core: init before the import, then bind, then time.

    It holds nothing that decides a time: shadowing or editing it changes what is sent, which the
    parent's MAC check rejects.
    """

    def __init__(self, key_fd: int, device: torch.device) -> None:
        if device.type == "cuda":
            torch.zeros(1, device=device)  # makes torch's primary context current for the driver API
            stream = torch.cuda.current_stream(device).cuda_stream
            l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
            self.overhead_us, self.spread_us, from_graph = _sealed.init(key_fd, stream, l2_bytes, _sealed_hooks())
            reference = "graph replay" if from_graph else "kernel pairs, no graphs here"
            self.method = (f"cuda-event per call in compiled code, L2 flushed, queued sleep, minus "
                           f"{self.overhead_us:.2f} us event overhead ({reference}; 5 rounds, spread "
                           f"{self.spread_us:.2f} us)")
        else:
            self.overhead_us, self.spread_us, _ = _sealed.init(key_fd, None, 0, _sealed_hooks())
            self.method = "wall clock in compiled code (cpu, not rankable)"
        self.persisting_l2_reset = device.type == "cuda"

    @staticmethod
    def bind(loader: Callable[[Any], Any], path: Any) -> bool:
        """Import the submission through ``loader``; False when it defines no callable custom_kernel."""
        return bool(_sealed.bind(loader, path))

    @staticmethod
    def time_call(data: Any, index: int, seed: int, sleep_us: float) -> tuple[Any, ...]:
        return _sealed.time_call(data, index, seed, sleep_us)

    @staticmethod
    def recheck(nonce: bytes) -> tuple[float, float, float, bytes]:
        return _sealed.recheck(nonce)
