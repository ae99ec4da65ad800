#!POPCORN leaderboard timing_ladder
#!POPCORN author harness-baselines
"""The timing ladder's kernel launched twice per call: the two-kernel row of the fidelity check (issue 38).

The same launch as triton_ladder.py, queued twice on the stream (the second writes the same y). Each
clock's reading of this file against twice its reading of triton_ladder.py says whether the clock
adds a second kernel's launch as it adds the first's (scripts/clock_checks.py, `additivity`): on the
compute rungs (n = 270336, 1 MiB, where a second pass meets no colder or warmer memory than the first)
the two launches do the same work, so an additive clock reads 2x. Not a baseline to rank: the ladder is
a calibration problem (task.yml `calibration: true`), off the leaderboard.
"""

import triton
from task import input_t, output_t
from triton_ladder import BLOCK, WARPS, _ladder


def custom_kernel(data: input_t) -> output_t:
    x, y, iters = data
    n = x.numel()
    for _ in range(2):
        _ladder[(triton.cdiv(n, BLOCK),)](x, y, n, iters, BLOCK=BLOCK, num_warps=WARPS)
    return y
