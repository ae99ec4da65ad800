"""The second clock's case rule (harness.judge.verdict.second_clock), on synthetic signed readings.

The readings are built from what the H100 showed (2026-11-26): honest GEMV calls read within their
2.0 us allowance but one in ~300, which read 5.9 us apart; a dual GEMM call read 6.5 against 5.1;
a start event recorded again after half the work shortens every call's events by that half.
"""

import statistics

import pytest

from harness.judge.verdict import second_clock
from harness.judge.worker_link.seal import ClockReading

GEMV_US, GEMV_ALLOWANCE_US = 27.8, 2.0


def honest(event_us: float = GEMV_US, allowance_us: float = GEMV_ALLOWANCE_US, gap_us: float = 0.4) -> ClockReading:
    return ClockReading(event_us=event_us, clock_us=event_us + gap_us + 0.3, gap_us=gap_us, allowance_us=allowance_us)


def rearmed(work_before_us: float = GEMV_US / 2) -> ClockReading:
    """The events bracket only the work after the re-armed start event; the stamps bracket all of it."""
    return ClockReading(event_us=GEMV_US - work_before_us, clock_us=GEMV_US + 0.7, gap_us=work_before_us + 0.4,
                        allowance_us=GEMV_ALLOWANCE_US)


OUTLIER = honest(gap_us=5.9)
DUAL_GEMM_OUTLIER = honest(event_us=152.1, allowance_us=5.1, gap_us=6.5)


@pytest.mark.parametrize("calls", [3, 10, 37, 100, 200, 1000])
@pytest.mark.parametrize("outlier", [OUTLIER, DUAL_GEMM_OUTLIER], ids=["gemv", "dual_gemm"])
def test_an_isolated_honest_outlier_never_rejects_a_case(calls, outlier):
    for at in (0, calls // 2, calls - 1):
        readings = [honest() for _ in range(calls)]
        readings[at] = outlier
        assert second_clock.disagreement(readings) is None


def test_two_outliers_in_a_small_case_pass_and_a_case_that_agrees_passes():
    assert second_clock.disagreement([OUTLIER, honest(), OUTLIER] + [honest()] * 7) is None
    assert second_clock.disagreement([honest()] * 100) is None
    assert second_clock.disagreement([]) is None
    assert second_clock.disagreement([ClockReading()] * 10) is None  # off the GPU: no reading, nothing judged


@pytest.mark.parametrize("calls", [1, 2, 3, 10, 100, 200])
def test_a_start_event_rearmed_on_every_call_is_rejected_with_one_line(calls):
    reason = second_clock.disagreement([rearmed() for _ in range(calls)])
    assert reason and "\n" not in reason
    assert f"disagree on {calls} of {calls} timed calls" in reason and "start or end event was recorded again" in reason
    assert "another process using this GPU" in reason  # an honest run on a shared GPU reads the same way


def test_a_small_rearm_is_caught_once_it_is_past_the_allowance():
    assert second_clock.disagreement([rearmed(work_before_us=1.5)] * 50) is None  # within 2.0 us: the open margin
    assert second_clock.disagreement([rearmed(work_before_us=3.0)] * 50)


@pytest.mark.parametrize(("calls", "rearmed_calls"), [(10, 3), (100, 6), (100, 10), (200, 11), (4, 2), (2, 1)])
def test_a_rearm_on_part_of_the_calls_is_rejected_past_the_tolerance(calls, rearmed_calls):
    readings = [rearmed()] * rearmed_calls + [honest()] * (calls - rearmed_calls)
    assert second_clock.disagreement(readings)


def test_what_is_tolerated_cannot_move_the_median_by_more_than_a_few_percentiles():
    """Re-armed calls read faster than every honest one; with as many as tolerated, the median time is
    still an honest time, at most OUTLIER_FRACTION of the calls (or two) below the honest median."""
    for calls in range(1, 400):
        allowed = second_clock.tolerated(calls)
        assert 2 * allowed < calls and allowed <= max(second_clock.OUTLIERS_TOLERATED,
                                                      second_clock.OUTLIER_FRACTION * calls)
        times = [50.0] * allowed + [100.0 + i for i in range(calls - allowed)]
        assert statistics.median(times) >= 100.0, calls
