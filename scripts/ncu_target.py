"""What Nsight Compute profiles for scripts/ncu_times.py: CALLS calls of one file on one shape.

Inputs are drawn and the file warmed up (JIT) before the profiler range opens, so only the
submission's own kernels are in it; ncu itself flushes the caches before each kernel.

    ncu --profile-from-start off ... python3 scripts/ncu_target.py FILE 'CASE_JSON' CALLS
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from harness.sol.replay_clock import POOL, shape_inputs
from harness.sol.replay_clock import load_shipped as load


def main() -> int:
    path, case, calls = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
    kernel = load(path)
    inputs = shape_inputs(path.parent.name, case)
    for data in inputs:
        kernel(data)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for index in range(calls):
        kernel(inputs[index % POOL])
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
