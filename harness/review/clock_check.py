"""An independent clock beside the harness's: each shape's kernels as Nsight Compute times them.

Profile mode (harness/judge/passes/nsight.py) runs each benchmark shape's call once more in a fresh worker
under ``ncu --cache-control all --clock-control none``: the clocks the harness's timed calls run
at, and caches flushed before each kernel, as the harness flushes before each call. The sum of the
call's kernel durations is held against the harness's median for that shape. Only one direction is
a flag: a harness time well under the kernels' own time means work escaped the timer (a stream
the timer never waited for, work done before its start event); a harness time above the kernels'
(launch gaps, host work between kernels) costs the entry, never helps it.

How far under is honest comes from two measurements: this GPU's fidelity bound (the harness against
graph replay, ``python -m harness calibrate``: harness.sol.fidelity), and how much more Nsight
Compute reads than graph replay (NCU_OVER_REPLAY_*). A GPU never calibrated falls back to
FALLBACK_MIN, and the review's notes say so.
"""

from __future__ import annotations

from harness.contract.results import RunResult
from harness.contract.task_spec import shape_text
from harness.review.findings import Flag, FlagClass
from harness.sol.calibration import load_calibration
from harness.sol.fidelity import FidelityBound, bound_of

NCU_OVER_REPLAY_US = 1.3
NCU_OVER_REPLAY_RELATIVE = 0.08
"""How much more Nsight Compute reads than graph replay on an honest kernel, at most: 1.3 us a kernel
(its launch ramp and drain, which replay overlaps) or 8% of the time (the GEMV's clean-L2 start),
H100 under the reading flush (docs/timing.md, "The flush decided by measurement", run 12; the
hypotheses and their refuting step: scripts/ncu_short_kernels.py)."""

FALLBACK_MIN = 0.60
"""Without a calibrated bound: the lowest honest ratio harness / ncu the H100's ladder showed
(0.664, a 1.9 us rung; docs/timing.md, "The ladder"), less a tenth."""


def lowest_honest_us(profiled_us: float, kernels: int, bound: FidelityBound | None) -> float:
    """The lowest median an honest entry shows beside ``kernels`` kernels that ncu timed at ``profiled_us``."""
    if bound is None:
        return FALLBACK_MIN * profiled_us
    ncu_excess = max(NCU_OVER_REPLAY_US * kernels, NCU_OVER_REPLAY_RELATIVE * profiled_us)
    return profiled_us - ncu_excess - bound.bound_us(profiled_us)


def bound_for(device_name: str) -> tuple[FidelityBound | None, str]:
    """(this GPU's calibrated fidelity bound or None, where the threshold comes from)."""
    bound, source = bound_of(load_calibration(device_name))
    name = device_name or "this device"
    if bound is None:
        return None, f"{FALLBACK_MIN:.2f}x ncu, the H100's documented ratio; {name}: {source}"
    return bound, f"{name}'s fidelity bound, {source}, plus ncu's excess over replay"


def clock_flags(stored: RunResult, profiled: RunResult) -> tuple[list[Flag], list[str]]:
    """(flags, notes): each benchmark shape's stored median against the profiled call's kernel time."""
    kernels = {shape_text(c.case): c.kernels for c in profiled.cases if c.kind == "benchmark" and c.kernels}
    if not kernels:
        why = profiled.reason or profiled.status.value
        return [], [f"independent clock: no kernel time from Nsight Compute ({why[:200]})"]
    device = str(profiled.device.get("name", ""))
    bound, source = bound_for(device)
    flags: list[Flag] = []
    notes = [] if bound else [f"independent clock: {source}"]
    for case in stored.cases:
        if case.kind != "benchmark" or not case.timing:
            continue
        shape = shape_text(case.case)
        profiled_us = sum(k.duration_us for k in kernels.get(shape, []))
        if not profiled_us:
            notes.append(f"independent clock: no kernel time for {shape}")
            continue
        low_us = lowest_honest_us(profiled_us, len(kernels[shape]), bound)
        if case.timing.median_us < low_us:
            flags.append(Flag(FlagClass.CLOCK, f"{shape}: the harness's median {case.timing.median_us:.3f} us is "
                              f"{case.timing.median_us / profiled_us:.2f}x the {len(kernels[shape])} kernel(s) "
                              f"Nsight Compute timed ({profiled_us:.3f} us); below {low_us:.3f} us ({source}) work "
                              "escaped the timer", rule="clock"))
    return flags, notes
