"""What Nsight Compute profiles for scripts/ncu_times.py: CALLS calls of one file on one shape.

Inputs are drawn and the file warmed up (JIT) before the profiler range opens, so only the
submission's own kernels are in it; ncu itself flushes the caches before each kernel.

    ncu --profile-from-start off ... python3 scripts/ncu_target.py FILE 'CASE_JSON' CALLS
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import torch
from graph_replay import POOL, load  # this folder's script: a submission imported beside its contest modules


def main() -> int:
    path, case, calls = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
    kernel = load(path)
    reference = importlib.import_module(f"problems.{path.parent.name}.reference")
    inputs = [reference.generate_input(**{**case, "seed": case["seed"] + i}, device="cuda") for i in range(POOL)]
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
