"""What the worker says when a submission raises: the submission's own line, the library's below it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.contract.protocol import TRACEBACK_CHARS
from harness.contract.results import Status
from harness.judge.run import evaluate_submission
from harness.judge.verdict.modes import MODES
from harness.worker.failures import classify, traceback_text

REPO = Path(__file__).resolve().parent.parent

# Line 6 calls json.loads, which raises inside the standard library's json/decoder.py.
RAISES_IN_LIBRARY = """#!POPCORN leaderboard nvfp4_gemv
import json


def custom_kernel(data):
    return json.loads("{")
"""


def _raise_from(path: Path) -> BaseException:
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    try:
        namespace["custom_kernel"](None)
    except BaseException as error:
        return error
    raise AssertionError("custom_kernel did not raise")


def test_the_reason_names_the_submissions_line_and_the_library_frame_below(tmp_path):
    path = tmp_path / "my_kernel.py"
    path.write_text(RAISES_IN_LIBRARY)
    reason = str(classify(_raise_from(path), str(path)))
    assert reason.startswith("JSONDecodeError: Expecting property name")
    assert "(at my_kernel.py:6 in custom_kernel, via json/decoder.py:" in reason


def test_without_a_frame_of_the_submission_the_last_frame_is_named(tmp_path):
    path = tmp_path / "my_kernel.py"
    path.write_text(RAISES_IN_LIBRARY)
    reason = str(classify(_raise_from(path), None))
    assert "(at json/decoder.py:" in reason and "via" not in reason


def test_the_traceback_is_kept_whole_up_to_its_cap():
    try:
        raise ValueError("x" * (3 * TRACEBACK_CHARS))
    except ValueError as error:
        text = traceback_text(error)
        assert classify(error).traceback == text
    assert len(text) <= TRACEBACK_CHARS + 20 and text.startswith("...") and text.rstrip().endswith("x")


def test_an_evaluation_keeps_the_traceback_and_the_cli_prints_it_with_verbose(tmp_path):
    path = tmp_path / "s.py"
    path.write_text(RAISES_IN_LIBRARY)
    result = evaluate_submission(None, path, MODES["test"], "cpu")
    assert result.status == Status.CRASHED
    assert "(at s.py:6 in custom_kernel, via json/decoder.py:" in result.reason
    first = result.cases[0]
    assert "Traceback (most recent call last)" in first.traceback and 'json.loads("{")' in first.traceback
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-m", "harness", "eval", str(path), "--mode", "test", "--device", "cpu",
                          "--json", str(out), "--verbose"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback (most recent call last)" in run.stdout and "json/decoder.py" in run.stdout
    assert "Traceback" in json.loads(out.read_text())["cases"][0]["traceback"]
    quiet = subprocess.run([sys.executable, "-m", "harness", "eval", str(path), "--mode", "test", "--device", "cpu"],
                           capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "Traceback" not in quiet.stdout and "--verbose" in quiet.stdout


@pytest.mark.parametrize("record", [{}, {"traceback": None}])
def test_results_without_a_traceback_still_load(record):
    from harness.contract.results import CaseResult, RunResult

    run = RunResult("p", "s.py", "", "test", {}, "0", cases=[CaseResult("test", {}, Status.PASSED)])
    data = run.to_json()
    data["cases"][0].pop("traceback", None)
    data["cases"][0].update(record)
    assert RunResult.from_json(data).cases[0].traceback is None
