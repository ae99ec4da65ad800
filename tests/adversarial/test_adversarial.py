"""The adversarial suite on the CPU: every cpu row of verdicts.yml gets its expected verdict.

Each row runs its submission through ``evaluate_submission(device="cpu")`` against a cut-down
copy of its problem (one case; see adversarial_suite.py). Rows run two at a time: each spends
most of its time starting a worker process.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from adversarial_suite import REPO, SUBMISSIONS, load_rows, markdown_table, run_row

from harness.judge.worker_link import supervision

ROWS = load_rows()
CPU_ROWS = [row for row in ROWS if row.platform == "cpu"]


@pytest.fixture(scope="module")
def observed(request):
    """Start every selected CPU row at once (two at a time, hangs first); tests wait on their own."""
    selected = {item.callspec.params["row"].file for item in request.session.items
                if "row" in getattr(getattr(item, "callspec", None), "params", {})}
    pool = ThreadPoolExecutor(2)
    ordered = sorted((row for row in CPU_ROWS if row.file in selected), key=lambda row: row.status != "timeout")
    futures: dict[str, Future] = {row.file: pool.submit(run_row, row, "cpu") for row in ordered}
    yield futures
    for future in futures.values():
        future.cancel()
    pool.shutdown(wait=True)


@pytest.mark.parametrize("row", CPU_ROWS, ids=[row.file for row in CPU_ROWS])
def test_cpu_row_gets_its_verdict(row, observed):
    got = observed[row.file].result()
    if got.skipped:
        pytest.skip(got.reason)
    assert got.matches(row), (
        f"{row.file} ({row.attack}): expected {row.status} with a reason containing {row.reason!r}, "
        f"got {got.status}: {got.reason!r}"
    )


def test_every_submission_has_exactly_one_row():
    files = sorted(path.name for path in SUBMISSIONS.glob("*.py") if not path.name.startswith("_"))
    listed = [row.file for row in ROWS]
    assert sorted(listed) == files and len(set(listed)) == len(listed)


def test_security_doc_shows_the_current_table():
    doc = (REPO / "docs" / "security.md").read_text()
    assert markdown_table(ROWS) in doc, "regenerate it: python tests/adversarial/adversarial_suite.py"


def test_a_supervised_row_is_skipped_where_the_supervisor_cannot_run(monkeypatch):
    monkeypatch.setattr(supervision, "unavailable", lambda: "the evaluator is not root")
    row = next(row for row in ROWS if row.supervised)
    got = run_row(row, "cpu")
    assert got.skipped and got.reason.endswith("the evaluator is not root")


def test_or_reason_is_as_right_as_reason_under_the_row_s_own_status():
    row = next(row for row in ROWS if row.file == "v01b_cache_by_data_ptr.py")
    assert row.accepts("failed", "the repeat test with new inputs in the same tensors (call 2 of this shape): mismatch")
    assert row.accepts("failed", "a timed call (call 8 of this shape): output: 7164 of 7168 elements mismatch")
    assert not row.accepts("rejected", "output: 7164 of 7168 elements mismatch")
    assert not row.accepts("failed", "the GPU's own clock and the timer's events disagree")
    assert not row.accepts("passed", "")
