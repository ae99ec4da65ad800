"""The second clock's verdict on one case: did its timed calls read short against the GPU's own clock?

Each timed call comes with a reading the compiled core signed (``seal.ClockReading``): the events'
time, the %globaltimer stamps the core's own kernels wrote around the window, and the allowance
calibrated at init. A start event recorded again during the call (tests/adversarial row s20)
shortens the events, never the stamps, by the work done before it, on every call it is done on.
An honest call reads beyond its allowance now and then: on the H100 (2026-11-26) one ranked GEMV
call in about 300 read 5.9 us apart against an allowance of 2.0 us, a dual GEMM call 6.5 against 5.1.
So no single reading is judged (the core judges none): a case is rejected when its readings are
beyond the allowance more often than isolated outliers explain. To gain, a re-arm must move the
median time: re-armed on more than half the calls it is caught by the first rule; on fewer, the
median moves only to a lower quantile of honest times, and the second rule keeps that quantile
within a few percent of the median (at most OUTLIER_FRACTION of the calls: the 47th percentile).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from harness.judge.worker_link.seal import ClockReading

OUTLIERS_TOLERATED = 2
"""Readings beyond the allowance a case may have whatever its size (one honest outlier in ~300
calls: three in one case of 100 calls is about one in a million)."""
OUTLIER_FRACTION = 0.05
"""The share of a large case's calls that may read beyond the allowance."""


def tolerated(calls: int) -> int:
    """How many of ``calls`` timed calls may read beyond their allowance: never half or more."""
    return min((calls - 1) // 2, max(OUTLIERS_TOLERATED, math.floor(OUTLIER_FRACTION * calls)))


def disagreement(readings: Sequence[ClockReading]) -> str | None:
    """One line saying why the case's times cannot stand, or None when they agree with the second clock."""
    beyond = [reading for reading in readings if reading.beyond]
    if not beyond or len(beyond) <= tolerated(len(readings)):
        return None
    worst = max(beyond, key=lambda reading: reading.gap_us - reading.allowance_us)
    return (f"the GPU's own clock and the timer's events disagree on {len(beyond)} of {len(readings)} timed calls "
            f"(at most {tolerated(len(readings))} may): e.g. events {worst.event_us:.2f} us, the core's GPU clock "
            f"{worst.clock_us:.2f} us, {worst.gap_us:.2f} us apart against an allowance of "
            f"{worst.allowance_us:.2f} us; the start or end event was recorded again during the call, or work of "
            "another stream ran around the timed window (another process using this GPU does too: time on an idle "
            "GPU)")


def median_us(readings: Sequence[ClockReading]) -> float | None:
    """The case's median window on the GPU's own clock, nothing subtracted (None off the GPU): beside the
    events' raw median it shows which clock a run-to-run difference lives in (docs/timing.md, run 43)."""
    return statistics.median(reading.clock_us for reading in readings) if any(r.clock_us for r in readings) else None
