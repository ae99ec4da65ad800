"""Sanitize mode's verdict on the test shapes (harness/judge/passes/sanitize.py) as flags."""

from __future__ import annotations

from harness.contract.results import RunResult, Status
from harness.contract.task_spec import shape_text
from harness.execution.eval_job import HarnessFailure
from harness.review.findings import Flag, FlagClass, one_line
from harness.review.reproduce import NOT_THE_ENTRYS


def sanitize_flags(result: RunResult) -> tuple[list[Flag], list[str]]:
    """(flags, notes): one flag per test shape compute-sanitizer did not pass; a run that could not be
    made (no compute-sanitizer, a harness failure) is a note."""
    if isinstance(result, HarnessFailure) or result.status in NOT_THE_ENTRYS:
        return [], [f"sanitize: not run ({result.status.value}: {one_line(result.reason, 200)})"]
    flags = [Flag(FlagClass.SANITIZE, one_line(f"{shape_text(c.case)}: {c.status.value}: {c.reason}"), rule="sanitize")
             for c in result.cases if c.status not in (Status.PASSED, Status.NOT_RUN)]
    return flags, []
