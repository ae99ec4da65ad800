"""The vendor library's own run of a problem's product, read as its times per shape.

``calibrate --vendor`` sends the problem's vendor file (task.yml ``vendor``, e.g. torch._scaled_mm,
which calls cuBLAS) through ``evaluate_submission`` in benchmark mode, as any entry is timed: its
own worker, the same inputs, the same timer and stopping rule, every output checked. A vendor that
cannot run here (cuBLAS has no NVFP4 below sm_100) is recorded with its one-line verdict, so the
report can say why the column is empty.
"""

from __future__ import annotations

from harness.contract.results import RunResult, Status
from harness.contract.task_spec import Task, shape_text
from harness.judge.passes.vendor_cache import VendorTime


def vendor_times(task: Task, result: RunResult) -> dict[str, VendorTime]:
    """Per benchmark shape: the vendor run's median, or the reason it has none."""
    library = task.vendor.library if task.vendor else ""
    by_shape = {shape_text(c.case): c for c in result.cases if c.kind == "benchmark"}
    times = {}
    for case in task.benchmarks:
        outcome = by_shape.get(shape_text(case))
        if outcome is not None and outcome.status == Status.PASSED and outcome.timing:
            times[shape_text(case)] = VendorTime(outcome.timing.median_us, library)
        else:
            reason = (outcome.reason if outcome is not None else result.reason) or result.status.value
            times[shape_text(case)] = VendorTime(None, f"{library} cannot run it here: {reason.splitlines()[0]}")
    return times

