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

    ncu --profile-from-start off ... python3 scripts/ncu_target.py FILE CALLS 'CASE_JSON' ['CASE_JSON' ...]
    ncu --profile-from-start off ... python3 scripts/ncu_target.py --floors CALLS
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.sol.globaltimer import Stamper
from harness.sol.replay_clock import POOL, reading_flush, shape_inputs
from harness.sol.replay_clock import load_shipped as load


def profiled(work: Callable[[], Any]) -> None:
    """Only this work's kernels in the profiler's range."""
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    work()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def floors(calls: int) -> None:
    """The empty kernel, then the stamp kernel, CALLS times each, every launch behind the flush."""
    flush, stamper = reading_flush(), Stamper(1)
    for launch in [stamper.empty] * calls + [lambda: stamper.mark(0)] * calls:
        flush()
        profiled(launch)


def main() -> int:
    if sys.argv[1] == "--floors":
        floors(int(sys.argv[2]))
        return 0
    path, calls, cases = Path(sys.argv[1]), int(sys.argv[2]), [json.loads(c) for c in sys.argv[3:]]
    kernel, flush, marker = load(path), reading_flush(), Stamper(1)
    for case in cases:
        profiled(lambda: marker.mark(0))
        try:
            inputs = shape_inputs(path.parent.name, case)
            for data in inputs:
                kernel(data)
            for index in range(calls):
                flush()
                profiled(lambda data=inputs[index % POOL]: kernel(data))
        except Exception as error:  # one shape that cannot run here leaves the others their times
            print(f"ncu_target: {case}: {type(error).__name__}: {str(error).splitlines()[0][:200]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
