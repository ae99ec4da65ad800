"""When to stop timing a case, and the statistics of the times taken (the parent's side).

The rule is named parameters with documented defaults; the worker never sees it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from harness.contract.results import TimingStats


@dataclass(frozen=True)
class StoppingRule:
    """When to stop timing a case. Times are per call; the budget counts the whole loop.

    Stop once at least ``min_runs`` calls were timed and the standard error of the mean is
    below ``max_relative_error`` of the mean; or at ``max_runs``; or when ``budget_s`` of wall
    time has gone (fresh inputs are generated for every call, which dominates for small kernels).
    """

    min_runs: int = 10
    max_runs: int = 100
    max_relative_error: float = 0.005
    budget_s: float = 15.0

    def done(self, samples_us: list[float], elapsed_s: float) -> bool:
        runs = len(samples_us)
        if runs >= self.max_runs or (runs >= 2 and elapsed_s >= self.budget_s):
            return True
        if runs < self.min_runs:
            return False
        mean = statistics.fmean(samples_us)
        error = statistics.stdev(samples_us) / math.sqrt(runs)
        return mean > 0 and error / mean < self.max_relative_error


@dataclass(frozen=True)
class WarmupRule:
    """How many warm-up calls follow a case's first call (which compiles), sized by the kernel's time.

    A kernel of at most ``short_us`` is warm after ``min_calls``: its calls are far shorter than the
    harness's own work per call (the parent's draw and check), so more of them would add seconds
    and settle nothing. A longer one goes on until two consecutive times agree within
    ``settle_fraction`` (its clocks and caches have settled), at most ``max_calls``. Every warm-up
    call still gets fresh inputs and a checked output; the first call's time (JIT) never counts.
    """

    min_calls: int = 1
    max_calls: int = 8
    short_us: float = 1000.0
    settle_fraction: float = 0.02

    def done(self, times_us: list[float]) -> bool:
        """Whether the warm-up is over after warm calls (the first call excluded) that took ``times_us``."""
        calls = len(times_us)
        if calls >= self.max_calls:
            return True
        if calls < self.min_calls:
            return False
        if times_us[-1] <= self.short_us:
            return True
        return calls >= 2 and abs(times_us[-1] - times_us[-2]) <= self.settle_fraction * times_us[-2]


WARMUP_RULE = WarmupRule()
BENCHMARK_RULE = StoppingRule(budget_s=15.0)
LEADERBOARD_RULE = StoppingRule(min_runs=100, max_runs=200, max_relative_error=0.002, budget_s=15.0)
CPU_RULE = StoppingRule(min_runs=3, max_runs=10, max_relative_error=0.02, budget_s=10.0)


def summarize(samples_us: list[float], method: str) -> TimingStats:
    ordered = sorted(samples_us)

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return TimingStats(
        median_us=statistics.median(ordered),
        mean_us=statistics.fmean(ordered),
        std_us=statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        min_us=ordered[0],
        max_us=ordered[-1],
        p10_us=quantile(0.1),
        p90_us=quantile(0.9),
        runs=len(ordered),
        method=method,
    )
