"""Does the L2 flush's write-back land in the timed call? Graph replay under three flushes (GPU only).

Issue 25's second hypothesis (docs/timing.md, "The ladder"): flushing the L2 by zeroing a buffer
twice its size leaves that much dirty data, which the timed kernel's own reads must write back to
DRAM, so memory-bound kernels read slower than under Nsight Compute's clean-cache flush. Per
shape, the same replay clock as scripts/graph_replay.py (harness.sol.replay_clock: in-graph
%globaltimer stamps around each call, the flush outside them) with three flushes:

- ``zero``: the buffer zeroed (today's method: dirty lines left);
- ``read``: the buffer read (a sum): the L2 ends full of clean lines;
- ``zero+read``: zeroed then read: the write-back happens inside the flush.

If the hypothesis holds, ``read`` and ``zero+read`` agree with each other and with ncu
(scripts/ncu_times.py) on the memory rungs and the GEMV, and ``zero`` reads higher; if all three
agree, it is refuted.

    python3 scripts/flush_variants.py OUT.json [FILE ...]   (default: the ladder and the GEMV)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from harness.contract.task_spec import load_task, shape_text
from harness.sol.replay_clock import ReplayClock, shape_inputs
from harness.sol.replay_clock import load_shipped as load

DEFAULT_FILES = ("submissions/timing_ladder/triton_ladder.py", "submissions/nvfp4_gemv/triton_gemv.py")


def flushes(buffer: torch.Tensor, total: torch.Tensor) -> dict:
    """The three ways to empty the L2 of the previous call's lines."""
    def read() -> None:
        torch.sum(buffer, dim=0, dtype=torch.int64, out=total)

    def zero_then_read() -> None:
        buffer.zero_()
        read()

    return {"zero": buffer.zero_, "read": read, "zero+read": zero_then_read}


def main() -> int:
    out = Path(sys.argv[1])
    buffer = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    total = torch.zeros((), dtype=torch.int64, device="cuda")
    clocks = {name: ReplayClock(flush) for name, flush in flushes(buffer, total).items()}
    rows = []
    for path in [Path(f) for f in sys.argv[2:]] or [Path(f) for f in DEFAULT_FILES]:
        kernel, problem = load(path), path.parent.name
        for case in load_task(problem).benchmarks:
            row, inputs = {"file": f"{problem}/{path.name}", "shape": shape_text(case)}, shape_inputs(problem, case)
            for name, clock in clocks.items():
                row[f"{name}_us"] = clock.time(kernel, inputs).us
            rows.append(row)
            print(json.dumps(row), flush=True)
    out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
