"""What Nsight Compute profiles for scripts/ncu_times.py: CALLS calls of one file on each named shape.

Per shape, a marker is profiled first (the replay clock's one-thread stamp kernel, named
harness.sol.globaltimer.KERNEL_NAME), so that one ncu run's kernels can be told apart by shape
(scripts/ncu_times.py); then inputs are drawn and the file warmed up (JIT); then the calls. Before
each call the L2 is flushed by reading a buffer twice its size, as graph replay and the core flush
(harness.sol.replay_clock.reading_flush), outside the profiler's range: only the call's own kernels
are profiled, and under ncu's ``--cache-control none`` each starts from the same clean L2 as under
replay (the same cache policy). A shape that fails is named on stderr; the others still run.

With ``--floors``, CALLS launches of the stamp module's empty kernel and CALLS of its stamp kernel,
each behind the same flush: ncu's floor, which scripts/ncu_times.py holds against the replay clock's
reading of the same empty kernel (harness.sol.replay_clock.Floors).

With ``--graph-log LOG`` (ncu's ``--graph-profiling graph``), every call is one CUDA graph of the call
(one graph per input set, captured after the warm-up), which ncu profiles as one workload: the whole
call, the gaps between its kernels as a graph has them, and ncu's own cost of a workload once per call,
where kernel by kernel ncu sums its kernels and pays that cost on each. The floors are graphs too. No
marker: each profiled range is one result, and LOG gets one JSON line per range in the order they ran
({"case": index} or {"floor": "empty" | "stamp"}), which scripts/ncu_times.py pairs with ncu's results.

    ncu --profile-from-start off ... python3 scripts/ncu_target.py [--graph-log LOG] FILE CALLS 'CASE_JSON' ...
    ncu --profile-from-start off ... python3 scripts/ncu_target.py [--graph-log LOG] --floors CALLS
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.sol.globaltimer import Stamper
from harness.sol.replay_clock import POOL, reading_flush, shape_inputs
from harness.sol.replay_clock import load_shipped as load


class Target:
    """Profiles works one range each: launched as they are, or (with a log) each replayed as a captured graph."""

    def __init__(self, graph_log: Path | None) -> None:
        self.graph_log = graph_log
        self._graphs: dict[int, Any] = {}

    def prepare(self, key: int, work: Callable[[], Any]) -> None:
        """In graph mode, capture ``work`` once (it has run eagerly before: JIT, allocations)."""
        if self.graph_log is None:
            return
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            work()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            work()
        self._graphs[key] = graph

    def profile(self, key: int, work: Callable[[], Any], label: dict[str, Any]) -> None:
        """Only this work's kernels (or its graph) in the profiler's range; in graph mode, the range logged."""
        run = self._graphs[key].replay if self.graph_log is not None else work
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        run()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        if self.graph_log is not None:
            with self.graph_log.open("a") as log:
                log.write(json.dumps(label) + "\n")


def floors(target: Target, calls: int) -> None:
    """The empty kernel, then the stamp kernel, CALLS times each, every launch behind the flush."""
    flush, stamper = reading_flush(), Stamper(1)
    kinds = {"empty": stamper.empty, "stamp": lambda: stamper.mark(0)}
    for key, (kind, launch) in enumerate(kinds.items()):
        launch()
        target.prepare(key, launch)
        for _ in range(calls):
            flush()
            target.profile(key, launch, {"floor": kind})


def shapes(target: Target, path: Path, calls: int, cases: list[dict[str, Any]]) -> None:
    kernel, flush, marker = load(path), reading_flush(), Stamper(1)
    for index, case in enumerate(cases):
        if target.graph_log is None:
            target.profile(-1, lambda: marker.mark(0), {})
        try:
            inputs = shape_inputs(path.parent.name, case)
            works = [lambda data=data: kernel(data) for data in inputs]
            for key, work in enumerate(works):
                work()
                target.prepare(key, work)
            for call in range(calls):
                flush()
                target.profile(call % POOL, works[call % POOL], {"case": index})
        except Exception as error:  # one shape that cannot run here leaves the others their times
            print(f"ncu_target: {case}: {type(error).__name__}: {str(error).splitlines()[0][:200]}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph-log", type=Path, help="each call a captured graph; ranges logged here")
    parser.add_argument("--floors", type=int, metavar="CALLS", help="ncu's floor: the empty and stamp kernels")
    parser.add_argument("file", type=Path, nargs="?")
    parser.add_argument("calls", type=int, nargs="?")
    parser.add_argument("cases", nargs="*", type=json.loads)
    args = parser.parse_args()
    target = Target(args.graph_log)
    if args.floors:
        floors(target, args.floors)
    elif args.file is None or args.calls is None:
        parser.error("name a FILE and CALLS, or --floors CALLS")
    else:
        shapes(target, args.file, args.calls, args.cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
