"""The fidelity check's decisions: the bands, ncu's empty-kernel floor, a second launch's cost (issue 38).

Pure arithmetic on the rows scripts/graph_replay.py and scripts/ncu_times.py measure (no GPU here):

- ``in_band``: issue 38's bands, max(3%, 0.2 us) for the harness against replay, max(3%, 0.3 us) for
  replay against ncu.
- ``NcuFloor``: ncu's gpu__time_duration of an empty kernel against the replay clock's reading of the
  same kernel (its stamps with the empty kernel between, less the stamps with nothing). The excess is
  a cost ncu charges every kernel and the replay clock does not; where it exceeds the band's 0.3 us,
  the band against raw ncu cannot hold below excess / 3% for any clock that leaves the launch out, and
  replay is also held against ncu less that excess per kernel (labelled so, beside the raw verdict).
- ``acceptance_line``: the count issue 38 asks for, its rows apart from the ladder launched twice.
- ``additivity``: each clock's reading of the ladder launched twice per call
  (submissions/timing_ladder/triton_ladder_twice.py) less twice its reading of the ladder, on the
  compute rungs: what the clock charges a second launch beyond the first. It decides why the replay
  clock read the two-kernel Triton GEMM 1.9-2.2 us under the harness (docs/timing.md). The stream
  replay (the same clock's groups queued on a stream, aligned to the graph's charge of a one-kernel
  call: scripts/graph_replay.py) is expected to charge it as the harness does: within CLOSE_US of the
  harness's figure (``stream_as_harness``). Raw, it cannot: its floor (stamp to stamp on the stream)
  holds one stream launch, taken off every call, so twice less two onces reads the graph's 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

HARNESS_BAND = (0.03, 0.2)
"""(relative, floor us): the harness against the replay clock."""
NCU_BAND = (0.03, 0.3)
"""(relative, floor us): the replay clock against Nsight Compute."""
ONCE, TWICE = "timing_ladder/triton_ladder.py", "timing_ladder/triton_ladder_twice.py"
CLOSE_US = 0.3
"""A second launch's cost within this of 0: the clock adds it as it adds the first."""
GAP_US = 1.0
"""The harness and replay differ on a second launch by at least this: half the GEMM's 1.9-2.2 us."""
MISSING = "open (a clock is missing)"


def in_band(measured: float | None, reference: float | None, relative: float, floor_us: float) -> bool | None:
    """Within max(relative, floor) of the reference; None when either is missing."""
    if not measured or not reference:
        return None
    return abs(measured - reference) <= max(relative * reference, floor_us)


@dataclass(frozen=True)
class NcuFloor:
    """One empty kernel by ncu and by the replay clock, in us."""

    ncu_empty_us: float
    replay_empty_us: float

    @property
    def excess_us(self) -> float:
        """What ncu charges each kernel beyond the replay clock's reading of it."""
        return self.ncu_empty_us - self.replay_empty_us

    @property
    def matters(self) -> bool:
        return self.excess_us > NCU_BAND[1]

    @property
    def raw_band_holds_from_us(self) -> float:
        """The shortest kernel for which max(3%, 0.3 us) can cover the excess (0 when the excess fits in 0.3 us)."""
        return self.excess_us / NCU_BAND[0] if self.matters else 0.0

    def ncu_less_floor_us(self, ncu_us: float | None, kernels_per_call: float) -> float | None:
        """ncu's time per call less the excess of each of its kernels (None without an ncu time or a floor
        that matters: then the raw figure is the comparison)."""
        if ncu_us is None or not self.matters:
            return None
        return ncu_us - kernels_per_call * self.excess_us

    def text(self) -> str:
        head = (f"ncu floor: an empty kernel reads {self.ncu_empty_us:.2f} us by ncu, {self.replay_empty_us:.2f} us "
                f"by replay (stamps with it less stamps with nothing): ncu charges each kernel "
                f"{self.excess_us:+.2f} us more")
        if not self.matters:
            return f"{head}, inside the band's 0.3 us: replay is held against raw ncu"
        return (f"{head}: replay within max(3%, 0.3 us) of raw ncu cannot hold below "
                f"{self.raw_band_holds_from_us:.0f} us for any clock that leaves the launch out; the column "
                f"'ncu - floor' takes {self.excess_us:.2f} us off per kernel")


def band_count(rows: list[dict[str, Any]], key: str) -> str:
    """'X of Y': the rows whose verdict ``key`` is true, of those with one (a row missing a clock has none)."""
    judged = [row[key] for row in rows if row.get(key) is not None]
    return f"{sum(judged)} of {len(judged)}"


def acceptance_line(rows: list[dict[str, Any]], key: str, pair: str) -> str:
    """Issue 38's count: the rows it names (every ladder rung and every shipped baseline's shape) whose verdict
    ``key`` (``pair`` names the two clocks) holds, the ladder launched twice (the diagnostic of a stream's
    launch gap, which a caller on a stream pays by construction) counted apart; rows without both figures
    are left out."""
    named = [row for row in rows if row["file"] != TWICE]
    twice = [row for row in rows if row["file"] == TWICE]
    return (f"issue 38's rows (every rung and baseline shape), {pair}: {band_count(named, key)} in band; "
            f"the ladder launched twice (the launch-gap diagnostic): {band_count(twice, key)}")


def compute_rung(shape: str) -> bool:
    """A ladder shape with an FMA chain (iters > 1): the second pass does the first's work again."""
    found = re.search(r"iters=(\d+)", shape)
    return bool(found) and int(found.group(1)) > 1


def additivity(rows: list[dict[str, Any]],
               clocks: tuple[str, ...] = ("harness_us", "replay_us", "stream_us", "ncu_us")) -> list[dict[str, Any]]:
    """Per compute rung in both ladder files: each clock's reading twice - 2 x once (None where one lacks)."""
    once = {r["shape"]: r for r in rows if r["file"] == ONCE}
    found = []
    for row in rows:
        single = once.get(row["shape"])
        if row["file"] != TWICE or single is None or not compute_rung(row["shape"]):
            continue
        second = {clock: (row[clock] - 2 * single[clock] if row.get(clock) and single.get(clock) else None)
                  for clock in clocks}
        found.append({"shape": row["shape"], **second, "verdict": second_launch_verdict(second),
                      "stream_as_harness": stream_as_harness(second)})
    return found


def stream_as_harness(second: dict[str, float | None]) -> bool | None:
    """The stream replay charges a second launch within CLOSE_US of the harness's charge (None without both)."""
    harness, stream = second.get("harness_us"), second.get("stream_us")
    return None if harness is None or stream is None else abs(stream - harness) <= CLOSE_US


def second_launch_verdict(second: dict[str, float | None]) -> str:
    """What one rung's second-launch costs say about the GEMM's gap (docs/timing.md, "Two kernels in a call")."""
    harness, replay = second.get("harness_us"), second.get("replay_us")
    if harness is None or replay is None:
        return MISSING
    if harness - replay >= GAP_US and abs(replay) <= CLOSE_US:
        return "stream gap: the harness pays a second launch, the graph does not"
    if replay - harness <= -GAP_US and abs(harness) <= CLOSE_US:
        return "stamps undercount: the replay clock reads a second launch short"
    if abs(harness) <= CLOSE_US and abs(replay) <= CLOSE_US:
        return "both additive: two launches alone do not explain the GEMM; its two different kernels do"
    return "open"


def additivity_lines(found: list[dict[str, Any]]) -> list[str]:
    """One line per compute rung and the verdict every rung with both clocks shares (or 'mixed')."""
    if not found:
        return ["second launch: no compute rung timed in both ladder files (the two-kernel row is missing)"]
    def us(value: float | None) -> str:
        return f"{value:+.2f}" if value is not None else "-"

    lines = [f"second launch {r['shape']}: harness {us(r['harness_us'])}, replay {us(r['replay_us'])}, stream "
             f"{us(r.get('stream_us'))}, ncu {us(r.get('ncu_us'))} us (twice - 2 x once): {r['verdict']}; stream "
             f"as harness: {_yes_no(r.get('stream_as_harness'))}" for r in found]
    judged = [r["verdict"] for r in found if r["verdict"] != MISSING]
    shared = "no rung with both clocks" if not judged else judged[0] if len(set(judged)) == 1 else "mixed"
    lines.append(f"second launch, every compute rung ({len(judged)} of {len(found)} with both clocks): {shared}")
    streamed = [r["stream_as_harness"] for r in found if r.get("stream_as_harness") is not None]
    lines.append(f"second launch by the stream replay: within {CLOSE_US} us of the harness's on {sum(streamed)} of "
                 f"{len(streamed)} rungs with both (expected: all)")
    return lines


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"
