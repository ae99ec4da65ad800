"""The harness's residual error against graph replay on one GPU: the bound printed beside each median.

``python -m harness calibrate`` times the timing ladder (problems/timing_ladder) twice on a GPU: by
the harness (a benchmark run, sealed core) and by graph replay (harness.sol.replay_clock: nothing of
the harness's timer: each flushed call between two %globaltimer stamps inside one CUDA graph, the
flush outside the pair), and stores each rung's pair with the GPU's calibration record. The bound is
the worst error seen, in the band's own shape (docs/timing.md: max(3%, 0.2 us)): below SPLIT_US an
absolute error (short kernels: the event pair's fixed costs dominate), from SPLIT_US a relative one
(long kernels: the flush and the clocks scale with the time). No constant is fitted: both are the
largest measured errors, so every rung lies inside its own bound. The harness's side runs in PROCESSES
worker processes: a short rung's median moved from one worker process to the next (sd 0.08-0.2 us at
2 us on an H200, docs/timing.md run 43: its inputs lay at one place and its calls ran on one stream for the
process's life). With the draws' placements (run 44) and the core's streams (run 45) taken in turn, the 2 us
rungs still move by sd 0.06-0.12 us, so a bound read in one process understates the error of the next; the
replay clock reads the same rung alike across processes.
"""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass
from typing import Any

SPLIT_US = 10.0
"""Rungs whose replay time is under this set the absolute part of the bound; the others the relative part."""
RECORD_KEY = "fidelity"
"""Where the entry lies in a device's calibration record (harness.sol.calibration)."""
PROCESSES = 5
"""Worker processes the harness's side of the measurement runs in; a record from fewer gives no bound."""
REPLAY_CLOCK = "stamps-in-graph, floor beside each call"
"""The replay clock an entry was measured against; an entry with another gives no bound: the replay that
subtracted a flush-only graph (its error grew with the flush), in-graph event pairs (2.4-2.7 us above the
stamps on single kernels on an H100), or the stamps with one floor measured in a graph of its own
(``stamps-in-graph``: 0.78 or 1.13 us by process on the same H100): docs/timing.md."""


@dataclass(frozen=True)
class FidelityPoint:
    """One rung in one worker process: what the harness read and what graph replay read, in us."""

    shape: str
    harness_us: float
    replay_us: float

    @property
    def error_us(self) -> float:
        return abs(self.harness_us - self.replay_us)


@dataclass(frozen=True)
class FidelityBound:
    """bound(t) = max(absolute_us, relative * t): the worst errors of the short and the long rungs."""

    absolute_us: float
    relative: float
    measured_at: str

    def bound_us(self, median_us: float) -> float:
        return max(self.absolute_us, self.relative * median_us)

    def text(self) -> str:
        return f"max({self.absolute_us:.2f} us, {100 * self.relative:.1f}%)"


def bound_from(points: list[FidelityPoint]) -> FidelityBound:
    """The worst absolute error under SPLIT_US and the worst relative error from it (0 where no rung is)."""
    short = [p.error_us for p in points if p.replay_us < SPLIT_US]
    long = [p.error_us / p.replay_us for p in points if p.replay_us >= SPLIT_US]
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return FidelityBound(max(short, default=0.0), max(long, default=0.0), when)


def entry(points: list[FidelityPoint], method: str, processes: int = PROCESSES) -> dict[str, Any]:
    """What the calibration record keeps: every rung's pair per process, the bound, how it was measured."""
    bound = bound_from(points)
    return {"points": [asdict(p) for p in points], "absolute_us": bound.absolute_us, "relative": bound.relative,
            "split_us": SPLIT_US, "measured_at": bound.measured_at, "method": method, "replay_clock": REPLAY_CLOCK,
            "processes": processes}


def bound_of(record: dict[str, Any] | None) -> tuple[FidelityBound | None, str]:
    """(the bound, where it comes from) from a device's calibration record; (None, why) without one."""
    stored = (record or {}).get(RECORD_KEY)
    if not isinstance(stored, dict):
        why = "never calibrated" if record is None else "calibrated without the fidelity measurement"
        return None, f"{why} on this GPU: python -m harness calibrate --force measures it"
    if stored.get("replay_clock") != REPLAY_CLOCK:
        return None, ("calibrated against an earlier graph replay (a flush-only graph subtracted, in-graph event "
                      "pairs, or a floor measured apart: unreliable under 10 us): python -m harness calibrate --force "
                      "measures it again")
    if (processes := stored.get("processes", 1)) < PROCESSES:
        return None, (f"its fidelity bound was measured in {processes} worker process(es), and a short median "
                      f"moves by process: python -m harness calibrate --force measures it over {PROCESSES}")
    try:
        bound = FidelityBound(float(stored["absolute_us"]), float(stored["relative"]), str(stored["measured_at"]))
    except (KeyError, TypeError, ValueError):
        return None, "its fidelity record is unreadable: python -m harness calibrate --force measures it again"
    return bound, (f"calibrated {bound.measured_at}: {bound.text()} against graph replay, the worst of {processes} "
                   "worker processes")
