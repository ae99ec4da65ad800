"""Graph replay, the clock the harness is held against: a shipped file's flushed calls in one CUDA graph.

For a shape: POOL input sets are drawn (fresh inputs, as the harness gives), one CUDA graph replays
ROUNDS x [read a 2x-L2 buffer, custom_kernel(inputs_i)], a second graph the flushes alone; per call:
(first - second) / calls. The flush reads, as the core's does: a zeroing flush leaves dirty lines
whose write-back lands in the timed kernel (docs/timing.md, "The flush decided by measurement").
Nothing of the harness's timer, worker or core is used, so an error in them cannot hide here. Used
by ``calibrate`` (the fidelity bound, harness.sol.fidelity) and scripts/graph_replay.py. GPU only.
Only the harness's own files are loaded here (the ladder, the baselines): never a contestant's.
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

POOL = 4
ROUNDS = 8
REPLAYS = 7
HOLD_CYCLES = 200_000
"""torch.cuda._sleep ahead of each replay: the GPU is busy when the start event is queued."""


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
    """Median over replays of (one graph of len(kernels) calls) / len(kernels)."""
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
        torch.cuda._sleep(HOLD_CYCLES)
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


def replay_us(kernel: Callable[[Any], Any], inputs: list[Any], flush: Callable[[], None]) -> float:
    """Graph replay's time of one flushed call, the flushes' own graph subtracted, in us."""
    def flushed_call(data: Any) -> None:
        flush()
        kernel(data)

    calls = [lambda data=data: flushed_call(data) for _ in range(ROUNDS) for data in inputs]
    return graph_per_call_us(calls, REPLAYS) - graph_per_call_us([flush] * len(calls), REPLAYS)
