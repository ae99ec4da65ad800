"""The stopping rule and statistics (behaviour, not timings)."""

import pytest

from harness.judge.verdict.benchmark_case import BenchmarkCase
from harness.judge.verdict.stopping import StoppingRule, WarmupRule, summarize
from harness.judge.verdict.wall_clock import WallClock
from harness.judge.worker_link.call_output import CallOutput
from harness.worker.timers import CpuTimer


def test_stops_at_min_runs_when_quiet():
    rule = StoppingRule(min_runs=5, max_runs=100, max_relative_error=0.01, budget_s=60)
    assert not rule.done([10.0] * 4, elapsed_s=0.1)
    assert rule.done([10.0] * 5, elapsed_s=0.1)


def test_noise_keeps_it_going_until_max_runs_or_budget():
    rule = StoppingRule(min_runs=3, max_runs=8, max_relative_error=0.001, budget_s=60)
    noisy = [1.0, 9.0] * 3
    assert not rule.done(noisy, elapsed_s=1)
    assert rule.done([*noisy, 1.0, 9.0], elapsed_s=1)
    assert rule.done(noisy, elapsed_s=61)


def test_summary_is_robust_to_an_outlier():
    stats = summarize([10.0] * 9 + [1000.0], method="m")
    assert stats.median_us == 10.0 and stats.max_us == 1000.0 and stats.runs == 10
    assert stats.p10_us == 10.0 and stats.mean_us == pytest.approx(109.0)


def test_cpu_timer_returns_the_result_and_a_positive_time():
    result, elapsed_us, host_us = CpuTimer().time_call(lambda: sum(range(1000)), sleep_us=0)
    assert result == 499500 and elapsed_us() > 0 and host_us > 0


# --- the warm-up, sized by the kernel's time ----------------------------------------------------


def test_a_short_kernel_is_warm_after_one_call_a_long_one_once_its_time_settles():
    rule = WarmupRule(min_calls=1, max_calls=8, short_us=1000.0, settle_fraction=0.02)
    assert not rule.done([])
    assert rule.done([30.0])  # 30 us: more calls would only add the harness's seconds
    assert not rule.done([5000.0])  # 5 ms: one time says nothing about settling
    assert not rule.done([5000.0, 4500.0])  # still falling (clocks ramping)
    assert rule.done([5000.0, 4500.0, 4450.0])  # within 2%
    assert rule.done([5000.0, 3000.0] * 4)  # never settles: at most max_calls


class FakeChecker:
    """A checker whose calls take the kernel times it is given (a fake timer); it records each call."""

    def __init__(self, kernel_us: list[float]) -> None:
        self.kernel_us, self.calls, self.phase_calls = kernel_us, [], 0

    def checked_call(self, session, case, index, sleep_us, stage, timeout_s, prefetch=False, buffers=""):
        self.calls.append((index, stage))
        self.phase_calls += 1
        time_us = self.kernel_us[min(index, len(self.kernel_us) - 1)]
        return CallOutput(time_us=time_us, host_us=20.0, output=None, unfinished=False)

    def reset_phases(self):
        self.phase_calls = 0

    def book(self, phase, ms):
        pass

    def per_call(self):
        return {}, {}

    def call_seed(self, case, index):
        return index


class FakeSession:
    overhead_us = first_overhead_us = 2.0

    def __init__(self, warm: int = 1):
        self.warm = warm  # the calls before timing the session asks for (its placements and streams)

    def recheck_overhead(self, timeout_s):
        return None

    def warm_calls(self, case):
        return self.warm


@pytest.mark.parametrize(
    ("kernel_us", "warm_calls"),
    [([9e5, 30.0], 1), ([9e5, 8000.0, 6000.0, 5000.0, 4990.0], 4), ([9e5] + [5000.0, 9000.0] * 10, 8)],
    ids=["short", "settles-after-4", "never-settles"],
)
def test_the_benchmark_warm_up_follows_the_kernel_time(kernel_us, warm_calls):
    """The first call (JIT, 0.9 s here) never counts; the timed calls go on from the next index."""
    checker = FakeChecker(kernel_us)
    bench = BenchmarkCase(checker, StoppingRule(min_runs=3, max_runs=3), {"warmup": 9, "call": 9, "benchmark": 9},
                          "fake timer", profiled=False, on_gpu=False, clock=WallClock())
    result = bench.run(FakeSession(), {"seed": 1}, None, None, note=print)
    stages = [stage for _, stage in checker.calls]
    assert stages == ["the first call (warm-up, JIT)"] + ["a warm-up call"] * warm_calls + ["a timed call"] * 3
    assert [index for index, _ in checker.calls] == list(range(len(stages)))  # fresh seeds, none reused
    assert result.timing.runs == 3


@pytest.mark.parametrize(("asked", "warm_calls"), [(1, 1), (3, 2), (8, 7)])
def test_the_warm_up_visits_every_placement_and_stream(asked, warm_calls):
    """A drawn case's calls take its placements, and every call the core's streams, in turn by index: the warm-up
    goes on until calls 0 .. asked - 1 have run (``WorkerSession.warm_calls``), so a cache keyed on the inputs'
    addresses or a stream's first allocation is made before any call is timed, even for a kernel the warm-up rule
    alone would time after one warm call."""
    checker = FakeChecker([9e5, 30.0])
    bench = BenchmarkCase(checker, StoppingRule(min_runs=3, max_runs=3), {"warmup": 9, "call": 9, "benchmark": 9},
                          "fake timer", profiled=False, on_gpu=False, clock=WallClock())
    bench.run(FakeSession(asked), {"seed": 1}, None, None, note=print)
    stages = [stage for _, stage in checker.calls]
    assert stages == ["the first call (warm-up, JIT)"] + ["a warm-up call"] * warm_calls + ["a timed call"] * 3
