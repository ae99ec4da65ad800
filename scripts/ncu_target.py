"""What Nsight Compute profiles for scripts/ncu_times.py: CALLS calls of one file on one shape.

Inputs are drawn and the file warmed up (JIT) first. Before each call the L2 is flushed by reading a
buffer twice its size, as graph replay and the core flush (harness.sol.replay_clock.reading_flush),
outside the profiler's range: only the call's own kernels are profiled, and under ncu's
``--cache-control none`` each starts from the same clean L2 as under replay (the same cache policy).

    ncu --profile-from-start off ... python3 scripts/ncu_target.py FILE 'CASE_JSON' CALLS
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from harness.sol.replay_clock import POOL, reading_flush, shape_inputs
from harness.sol.replay_clock import load_shipped as load


def main() -> int:
    path, case, calls = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
    kernel = load(path)
    inputs = shape_inputs(path.parent.name, case)
    for data in inputs:
        kernel(data)
    flush = reading_flush()
    for index in range(calls):
        flush()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        kernel(inputs[index % POOL])
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
