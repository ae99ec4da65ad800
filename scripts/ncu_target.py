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

With ``--range-log LOG`` (ncu's ``--replay-mode range``), each profiled range (one call, or one floor
launch) is one result: the whole call as it ran, the gaps between its kernels and any overlap of them
included, where kernel by kernel ncu serialises the call's kernels and sums them. No marker: LOG gets one
JSON line per range in the order they ran ({"case": index} or {"floor": "empty" | "stamp"}), which
scripts/ncu_times.py pairs with ncu's results.

    ncu --profile-from-start off ... python3 scripts/ncu_target.py [--range-log LOG] FILE CALLS 'CASE_JSON' ...
    ncu --profile-from-start off ... python3 scripts/ncu_target.py [--range-log LOG] --floors CALLS
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
    """Profiles works one range each, every range logged where a log is named (ncu's range replay)."""

    def __init__(self, range_log: Path | None) -> None:
        self.range_log = range_log

    def profile(self, work: Callable[[], Any], label: dict[str, Any]) -> None:
        """Only this work's launches in the profiler's range (the GPU idle before it and waited for after)."""
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        work()
        torch.cuda.profiler.stop()
        torch.cuda.synchronize()
        if self.range_log is not None:
            with self.range_log.open("a") as log:
                log.write(json.dumps(label) + "\n")


def floors(target: Target, calls: int) -> None:
    """The empty kernel, then the stamp kernel, CALLS times each, every launch behind the flush."""
    flush, stamper = reading_flush(), Stamper(1)
    for kind, launch in {"empty": stamper.empty, "stamp": lambda: stamper.mark(0)}.items():
        for _ in range(calls):
            flush()
            target.profile(launch, {"floor": kind})


def shapes(target: Target, path: Path, calls: int, cases: list[dict[str, Any]]) -> None:
    kernel, flush, marker = load(path), reading_flush(), Stamper(1)
    for index, case in enumerate(cases):
        if target.range_log is None:
            target.profile(lambda: marker.mark(0), {})
        try:
            inputs = shape_inputs(path.parent.name, case)
            for data in inputs:
                kernel(data)
            for call in range(calls):
                flush()
                target.profile(lambda data=inputs[call % POOL]: kernel(data), {"case": index})
        except Exception as error:  # one shape that cannot run here leaves the others their times
            print(f"ncu_target: {case}: {type(error).__name__}: {str(error).splitlines()[0][:200]}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--range-log", type=Path, help="each profiled range logged here (range replay)")
    parser.add_argument("--floors", type=int, metavar="CALLS", help="ncu's floor: the empty and stamp kernels")
    parser.add_argument("file", type=Path, nargs="?")
    parser.add_argument("calls", type=int, nargs="?")
    parser.add_argument("cases", nargs="*", type=json.loads)
    args = parser.parse_args()
    target = Target(args.range_log)
    if args.floors:
        floors(target, args.floors)
    elif args.file is None or args.calls is None:
        parser.error("name a FILE and CALLS, or --floors CALLS")
    else:
        shapes(target, args.file, args.calls, args.cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
