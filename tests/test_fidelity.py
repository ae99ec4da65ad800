"""The fidelity bound: measured by calibrate per GPU, stored with its calibration, printed beside each median."""

from __future__ import annotations

import json

import pytest

from harness.commands import calibrate_command
from harness.contract.results import CaseResult, RunResult, Status, TimingStats
from harness.contract.task_spec import load_task, shape_text
from harness.display import report
from harness.judge import run
from harness.sol import calibration, fidelity, replay_clock
from harness.sol.fidelity import FidelityPoint

H100 = "NVIDIA H100 80GB HBM3"
# Short rungs err by 0.07 and 0.21 us; long ones by 1.0% and 4.5%.
POINTS = [FidelityPoint("a", 1.92, 1.99), FidelityPoint("b", 4.71, 4.50), FidelityPoint("c", 20.2, 20.0),
          FidelityPoint("d", 20.9, 20.0)]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "calibration.json"
    monkeypatch.setenv(calibration.CACHE_ENV, str(path))
    path.write_text(json.dumps({"format": 1, "devices": {H100: {"device": "cuda", "device_name": H100}}}))
    return path


def test_the_bound_is_the_worst_short_error_and_the_worst_long_relative_error():
    bound = fidelity.bound_from(POINTS)
    assert bound.absolute_us == pytest.approx(0.21) and bound.relative == pytest.approx(0.045)
    assert bound.bound_us(2.0) == pytest.approx(0.21) and bound.bound_us(100.0) == pytest.approx(4.5)
    assert all(p.error_us <= bound.bound_us(p.replay_us) + 1e-12 for p in POINTS)  # every rung inside its own


def test_a_gpu_without_the_measurement_has_no_bound_and_says_why(cache):
    assert "never calibrated" in fidelity.bound_of(None)[1]
    bound, why = fidelity.bound_of(calibration.load_calibration(H100, cache))
    assert bound is None and "without the fidelity measurement" in why and "calibrate --force" in why
    unreadable = {"absolute_us": "x", "replay_clock": fidelity.REPLAY_CLOCK, "processes": fidelity.PROCESSES}
    assert "unreadable" in fidelity.bound_of({fidelity.RECORD_KEY: unreadable})[1]
    with pytest.raises(KeyError, match="no calibration record"):
        calibration.store_entry("NVIDIA B200", fidelity.RECORD_KEY, {}, cache)


def test_a_bound_measured_against_an_earlier_replay_is_not_used():
    """The replay that subtracted a flush-only graph erred by up to 1.45 us under 10 us, the in-graph event
    pairs read 2.4-2.7 us above the stamps, the stamps' floor measured apart moved 0.35 us by process: a
    bound measured against any of them is refused."""
    oldest = {k: v for k, v in fidelity.entry(POINTS, "old").items() if k != "replay_clock"}
    events = {**fidelity.entry(POINTS, "events"), "replay_clock": "events-in-graph"}
    floor_apart = {**fidelity.entry(POINTS, "floor apart"), "replay_clock": "stamps-in-graph"}
    for old in (oldest, events, floor_apart):
        bound, why = fidelity.bound_of({fidelity.RECORD_KEY: old})
        assert bound is None and "earlier graph replay" in why and "calibrate --force" in why
    assert fidelity.bound_of({fidelity.RECORD_KEY: fidelity.entry(POINTS, "new")})[0] is not None


def test_a_bound_read_in_one_worker_process_is_not_used():
    """A short rung's median moves by worker process (run 43): a bound from one process understates the next's."""
    for stored in ({k: v for k, v in fidelity.entry(POINTS, "one").items() if k != "processes"},
                   fidelity.entry(POINTS, "one", processes=1)):
        bound, why = fidelity.bound_of({fidelity.RECORD_KEY: stored})
        assert bound is None and "1 worker process" in why and f"over {fidelity.PROCESSES}" in why


def test_calibrate_measures_every_rung_both_ways_and_stores_the_bound(cache, monkeypatch):
    """Fake numbers through calibrate's own flow: the harness's runs (one per worker process, the third
    reading every rung 0.2 us high) and graph replay of each rung; the bound is the worst process's."""
    task = load_task(calibrate_command.LADDER)
    harness_us = {shape_text(c): 2.0 + i for i, c in enumerate(task.benchmarks)}
    runs = []

    def evaluate(*args):
        high = 0.2 if len(runs) == 2 else 0.0
        runs.append([CaseResult("benchmark", c, Status.PASSED, timing=_stats(harness_us[shape_text(c)] + high))
                     for c in task.benchmarks])
        return _run_of(runs[-1], H100)

    monkeypatch.setattr(calibrate_command, "evaluate_submission", evaluate)
    monkeypatch.setattr(calibrate_command.replay_clock, "load_shipped", lambda path: "kernel")
    monkeypatch.setattr(calibrate_command.replay_clock, "shape_inputs", lambda problem, case: case)

    class Clock:  # the replay clock's reading: 0.1 us under the harness on every rung
        def time(self, kernel, case):
            return replay_clock.Reading(harness_us[shape_text(case)] - 0.1, 0.0, 0.0, 1)

    monkeypatch.setattr(calibrate_command.replay_clock, "ReplayClock", Clock)
    record = calibrate_command.measure_fidelity(H100, cache)
    stored = calibration.load_calibration(H100, cache)[fidelity.RECORD_KEY]
    assert len(runs) == fidelity.PROCESSES and stored["processes"] == fidelity.PROCESSES
    assert record[fidelity.RECORD_KEY] == stored and len(stored["points"]) == fidelity.PROCESSES * len(task.benchmarks)
    bound, _ = fidelity.bound_of(record)
    assert bound.absolute_us == pytest.approx(0.3) and bound.relative == pytest.approx(0.3 / 10.9)
    text = "\n".join(calibrate_command._fidelity_lines(record))
    assert (f"{len(task.benchmarks)} timing-ladder rungs in {fidelity.PROCESSES} worker processes: "
            "bound max(0.30 us, 2.8%)") in text
    assert "harness 2.00-2.20 us, replay 1.90 us (worst +0.30 us, +15.8%)" in text


def test_each_median_carries_its_bound_in_the_json_and_the_report(cache):
    points = [FidelityPoint("a", 2.2, 2.0), FidelityPoint("b", 30.6, 30.0)]
    calibration.store_entry(H100, fidelity.RECORD_KEY, fidelity.entry(points, "test"), cache)
    task = load_task("nvfp4_gemv")
    timed = [CaseResult("benchmark", task.benchmarks[0], Status.PASSED, timing=_stats(27.78)),
             CaseResult("benchmark", task.benchmarks[1], Status.PASSED, timing=_stats(5.0))]
    result = _run_of(timed, H100)
    result.error_bound_note = run._with_error_bounds(timed, H100)
    assert timed[0].error_bound_us == pytest.approx(0.5556) and timed[1].error_bound_us == pytest.approx(0.2)
    assert RunResult.from_json(result.to_json()).cases[0].error_bound_us == pytest.approx(0.5556)
    text = report.render(result)
    assert "27.78 +-0.56" in text and "5.00 +-0.20" in text
    assert "+-: the harness's error against graph replay (calibrated" in text
    assert f"against graph replay, the worst of {fidelity.PROCESSES} worker processes" in text


def test_a_gpu_never_calibrated_prints_no_bound_and_why(cache):
    timed = [CaseResult("benchmark", load_task("nvfp4_gemv").benchmarks[0], Status.PASSED, timing=_stats(27.78))]
    result = _run_of(timed, "NVIDIA B200")
    result.error_bound_note = run._with_error_bounds(timed, "NVIDIA B200")
    text = report.render(result)
    assert timed[0].error_bound_us is None and "+-" not in text.split("+-: none")[0]
    assert "+-: none (never calibrated on this GPU: python -m harness calibrate --force measures it)" in text


def _stats(median_us: float) -> TimingStats:
    return TimingStats(median_us, median_us, 0.0, median_us, median_us, median_us, median_us, 10, "test")


def _run_of(cases: list[CaseResult], device_name: str) -> RunResult:
    return RunResult("p", "f.py", "", "benchmark", {"type": "cuda", "name": device_name}, "0", status=Status.PASSED,
                     cases=cases)
