#!POPCORN leaderboard timing_ladder
#!POPCORN author harness-baselines
"""A ladder rung in plain torch: one kernel launch per step, so only the CPU checks use it."""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, y, iters = data
    y.copy_(x)
    for _ in range(iters):
        y.mul_(0.5).add_(0.25)
    return y
