"""The physics floor per shape: a time below the speed of light, or one shape far out of line with the rest.

Why per shape: the ranking's geometric mean can be driven to nothing by one shape (a live board's
rank 1 once had one shape near zero); each shape's % of the speed of light (harness/sol/) is held
against 100% and against the entry's other shapes. Pure: reads a RunResult, stored or fresh.
"""

from __future__ import annotations

from harness.contract.results import CaseResult, RunResult
from harness.contract.task_spec import shape_text
from harness.judge.verdict.score import geometric_mean
from harness.review.findings import Flag, FlagClass

MAX_PCT_OF_SOL = 100.0
"""A median at more than this % of the speed of light is faster than the hardware allows."""

OUTLIER_FACTOR = 4.0
"""A shape whose % of SOL is more than this many times the geometric mean of the entry's other shapes'
is out of line: an honest kernel's shapes land within a small factor of each other (each shipped Triton
baseline's shapes lie within 1.7x of each other on the H100, docs/baselines.md's status table)."""


def _timed(result: RunResult) -> list[CaseResult]:
    return [c for c in result.cases if c.kind == "benchmark" and c.timing and c.pct_of_sol]


def physics_flags(result: RunResult, label: str) -> tuple[list[Flag], list[str]]:
    """(flags, notes) for one run; ``label`` says which ('stored run', 'fresh run')."""
    timed = _timed(result)
    if not timed:
        return [], [f"physics floor of the {label}: not run (no speed-of-light figures for its device)"]
    flags = []
    for case in timed:
        pct, median = case.pct_of_sol or 0.0, case.timing.median_us if case.timing else 0.0
        if pct > MAX_PCT_OF_SOL:
            flags.append(Flag(FlagClass.PHYSICS_FLOOR,
                              f"{label}, {shape_text(case.case)}: median {median:.3f} us is below the speed of light "
                              f"{case.sol_us or 0.0:.3f} us ({pct:.0f}% of SOL)", rule="physics"))
        others = geometric_mean([c.pct_of_sol or 0.0 for c in timed if c is not case])
        if others and pct > OUTLIER_FACTOR * others:
            flags.append(Flag(FlagClass.PHYSICS_FLOOR,
                              f"{label}, {shape_text(case.case)}: {pct:.1f}% of SOL is {pct / others:.1f}x the "
                              f"geometric mean of its other shapes ({others:.1f}%; the bound is {OUTLIER_FACTOR:g}x)",
                              rule="physics"))
    return flags, []
