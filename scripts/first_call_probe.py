"""Where the first test's seconds go (issue 33; GPU only): one process, each step timed.

A contestant's first test of the Triton GEMV took 3.4 s on the H100 with an empty compile cache and
3.7 s with the first run's (docs/results.md run 14): the kept cache saved nothing there. This times,
in a fresh process with the compile cache named by TRITON_CACHE_DIR: torch's CUDA start, `import
triton`, the problem's first input draw (its own Triton kernels), the submission's import, its first
call (JIT compile or cache load) and its second. Run twice with one cache folder: the second run's
first call is the cached one.

    TRITON_CACHE_DIR=DIR python3 scripts/first_call_probe.py
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

import torch

from harness.worker import contest_modules


def main() -> None:
    steps: dict[str, float] = {}
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        torch.cuda.synchronize()
        now = time.perf_counter()
        steps[name] = round(now - mark, 3)
        mark = now

    torch.zeros(1, device="cuda")
    lap("cuda_start")
    importlib.import_module("triton")
    lap("import_triton")
    reference = importlib.import_module("problems.nvfp4_gemv.reference")
    data = reference.generate_input(m=128, k=256, l=1, seed=1111, device="cuda")
    lap("first_draw")
    data = reference.generate_input(m=128, k=256, l=1, seed=1112, device="cuda")
    lap("second_draw")
    contest_modules.install(reference, Path("problems/nvfp4_gemv/task.py"))  # the contest's task, utils
    sys.path.insert(0, str(Path("submissions/nvfp4_gemv").resolve()))
    submission = importlib.import_module("triton_gemv")
    lap("submission_import")
    submission.custom_kernel(data)
    lap("first_call")
    submission.custom_kernel(data)
    lap("second_call")
    print(json.dumps(steps))


if __name__ == "__main__":
    main()
