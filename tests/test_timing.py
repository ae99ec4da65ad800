"""The stopping rule and statistics (behaviour, not timings)."""

import pytest

from harness.judge.verdict.stopping import StoppingRule, summarize
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
