"""An independent clock beside the harness's: each shape's kernels as Nsight Compute times them.

Profile mode (harness/judge/passes/nsight.py) runs each benchmark shape's call once more in a fresh worker
under ``ncu --cache-control all --clock-control none``: the clocks the harness's timed calls run
at, and caches flushed before each kernel, as the harness flushes before each call. The sum of the
call's kernel durations is held against the harness's median for that shape. Only one direction is
a flag: a harness time well under the kernels' own time means work escaped the timer (a stream
the timer never waited for, work done before its start event); a harness time above the kernels'
(launch gaps, host work between kernels) costs the entry, never helps it.
"""

from __future__ import annotations

from harness.contract.results import RunResult
from harness.contract.task_spec import shape_text
from harness.review.findings import Flag, FlagClass

HARNESS_OVER_PROFILER_MIN = {"NVIDIA H100 80GB HBM3": 0.60}
"""Per device, the lowest honest ratio of the harness's median to ncu's kernel time. Measured on the
H100 (docs/timing.md, "The ladder: three clocks side by side", 2026-11-24/25): harness / ncu ranged
from 0.664 (a 1.9 us memory rung, where ncu's duration adds each kernel's launch ramp) to 1.215
(the GEMV, where ncu starts each kernel with a clean L2); 0.60 leaves a tenth below the lowest."""

DEFAULT_MIN = 0.60
"""For a device without its own measurement: the H100's bound (said so in the flag)."""


def bound_for(device_name: str) -> tuple[float, str]:
    """(lowest honest ratio, where it comes from) for this device."""
    if device_name in HARNESS_OVER_PROFILER_MIN:
        return HARNESS_OVER_PROFILER_MIN[device_name], f"{device_name}'s measured bound"
    return DEFAULT_MIN, f"the H100's bound; {device_name or 'this device'} has no measurement of its own"


def clock_flags(stored: RunResult, profiled: RunResult) -> tuple[list[Flag], list[str]]:
    """(flags, notes): each benchmark shape's stored median against the profiled call's kernel time."""
    kernels = {shape_text(c.case): c.kernels for c in profiled.cases if c.kind == "benchmark" and c.kernels}
    if not kernels:
        why = profiled.reason or profiled.status.value
        return [], [f"independent clock: no kernel time from Nsight Compute ({why[:200]})"]
    device = str(profiled.device.get("name", ""))
    low, source = bound_for(device)
    flags, notes = [], []
    for case in stored.cases:
        if case.kind != "benchmark" or not case.timing:
            continue
        shape = shape_text(case.case)
        profiled_us = sum(k.duration_us for k in kernels.get(shape, []))
        if not profiled_us:
            notes.append(f"independent clock: no kernel time for {shape}")
            continue
        ratio = case.timing.median_us / profiled_us
        if ratio < low:
            flags.append(Flag(FlagClass.CLOCK, f"{shape}: the harness's median {case.timing.median_us:.3f} us is "
                              f"{ratio:.2f}x the {len(kernels[shape])} kernel(s) Nsight Compute timed "
                              f"({profiled_us:.3f} us); below {low:.2f}x ({source}) work escaped the timer",
                              rule="clock"))
    return flags, notes
