"""The evaluation's order of events: the parent's first use of its own kernels beside the first test."""

import threading
import time
from pathlib import Path

from harness.contract.results import Status
from harness.contract.task_spec import load_task
from harness.display.progress import as_progress
from harness.judge.verdict.evaluation import Evaluation, core_draws
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions
from harness.judge.worker_link import seal

REPO = Path(__file__).resolve().parents[1]


def _evaluation(mode: str) -> Evaluation:
    task = load_task("nvfp4_gemv")
    evaluation = Evaluation(task, REPO / "submissions/nvfp4_gemv/torch_reference.py", MODES[mode], "cpu",
                            RunOptions(), as_progress(None), {"type": "cpu"})
    evaluation.warms_first_use = True  # as on a GPU (the CPU's checker draws on a thread anyway)
    return evaluation


def _recorded(evaluation: Evaluation, events: list[str]) -> threading.Event:
    """Every checked call and the first-use thread logged into ``events``; the thread waits (up to
    10 s) for the first test's call to be in flight, logs whether it was, and takes a second more."""
    in_flight = threading.Event()
    checked_call, first_use = evaluation.checker.checked_call, evaluation.checker._draw_and_reference

    def call(session, case, index, *args, **kwargs):
        events.append(f"call {case['m']} starts")
        in_flight.set()
        try:
            return checked_call(session, case, index, *args, **kwargs)
        finally:
            events.append(f"call {case['m']} ends")

    def warm(seeded, synchronized=False):
        if not synchronized:  # the check drawing its own copy, not the early one
            return first_use(seeded)
        events.append(f"first use {seeded['m']} beside a call: {in_flight.wait(10)}")
        time.sleep(1.0)  # a slow compile: the next case must still wait for it
        computed = first_use(seeded, synchronized)
        events.append("first use done")
        return computed

    evaluation.checker.checked_call, evaluation.checker._draw_and_reference = call, warm
    return in_flight


def test_the_parent_warms_its_kernels_beside_the_first_test_and_is_done_before_the_next_case():
    evaluation = _evaluation("test")
    events: list[str] = []
    _recorded(evaluation, events)
    first, second = evaluation.task.cpu_tests[:2]
    try:
        results = evaluation.run([("test", first), ("test", second)])
    finally:
        evaluation.close()
    assert [r.status for r in results] == [Status.PASSED, Status.PASSED]
    assert f"first use {first['m']} beside a call: True" in events  # overlapped with the worker's first test
    # Once only, for the first test, and finished before the second test's first call.
    assert sum(e.startswith("first use ") and "done" not in e for e in events) == 1
    assert events.index("first use done") < events.index(f"call {second['m']} starts")
    assert evaluation.checker._early == {}  # the first test's check took what was computed early
    assert evaluation.clock.seconds["tests"] > 0


def test_no_first_use_thread_beside_a_benchmark():
    """A run that starts with a benchmark (its warm-up and timed calls) never has the parent's
    thread on the GPU beside it."""
    evaluation = _evaluation("benchmark")
    events: list[str] = []
    _recorded(evaluation, events)
    case = evaluation.task.cpu_tests[0]
    try:
        evaluation.run([("benchmark", case)])
    finally:
        evaluation.close()
    assert events and not any(e.startswith("first use") for e in events)


def _tests_run(sends_ahead: bool, failing: set[int]) -> tuple[list, list[str]]:
    """Three tests on a CPU worker (two calls each), the check of the last call of the tests numbered
    in ``failing`` failing; (results, events): each send ahead and each check's start and end."""
    evaluation = _evaluation("test")
    evaluation.warms_first_use, evaluation.sends_ahead = False, sends_ahead
    cases = [{**evaluation.task.cpu_tests[0], "seed": seed} for seed in (11, 12, 13)]
    events: list[str] = []
    check, send_ahead = evaluation.checker.check, evaluation.checker.send_ahead

    def checked(inputs, result, expected=None):
        test = sum(e.endswith("starts") for e in events) // evaluation.test_calls
        events.append(f"check {test} starts")
        time.sleep(0.3)  # a slow reference: the worker runs the next test meanwhile
        ok, message = check(inputs, result, expected)
        events.append(f"check {test} ends")
        last_call = sum(e == f"check {test} ends" for e in events) == evaluation.test_calls
        return (False, "wrong on purpose") if test in failing and last_call else (ok, message)

    def sent(session, case, timeout_s, buffers=""):
        events.append(f"sent ahead {cases.index(case)}")
        return send_ahead(session, case, timeout_s, buffers)

    evaluation.checker.check, evaluation.checker.send_ahead = checked, sent
    try:
        results = evaluation.run([("test", case) for case in cases])
    finally:
        evaluation.close()
    return results, events


def test_the_next_test_runs_while_the_parent_checks_the_last():
    results, events = _tests_run(sends_ahead=True, failing=set())
    assert [r.status for r in results] == [Status.PASSED] * 3
    # Test 1 left before test 0's last check began, test 2 before test 1's; none after the last test.
    assert events.index("sent ahead 1") < events.index("check 0 starts", events.index("check 0 ends"))
    assert events.index("sent ahead 2") < events.index("check 1 starts", events.index("check 1 ends"))
    assert [e for e in events if e.startswith("sent")] == ["sent ahead 1", "sent ahead 2"]


def test_verdicts_with_tests_sent_ahead_are_those_without():
    """Test 0 fails after test 1 was sent (test 1 is still collected and judged); test 1 fails the
    same way, and fail-fast stops test 2, which was in flight: never judged, as without."""
    ahead, events = _tests_run(sends_ahead=True, failing={0, 1})
    plain, _ = _tests_run(sends_ahead=False, failing={0, 1})
    assert [(r.status, r.reason) for r in ahead] == [(r.status, r.reason) for r in plain]
    assert [r.status for r in ahead] == [Status.FAILED, Status.FAILED, Status.NOT_RUN]
    assert "wrong on purpose" in ahead[0].reason
    assert "sent ahead 2" in events and "check 2 starts" not in events


def test_a_gpu_worker_captures_only_the_timed_cases():
    """Issue 40 part D: the core draws the benchmarks' inputs (timed); tests are untimed and keep the
    ordinary draw, so their shapes are not captured at the worker's Start (3 captures here, not 12)."""
    evaluation = _evaluation("benchmark")
    pending = [("test", test) for test in evaluation.task.tests] + [
        ("benchmark", bench) for bench in evaluation.task.benchmarks]
    assert evaluation.drawn_cases(pending) is None  # on the CPU: the worker draws every call
    evaluation.core_draws = True
    assert evaluation.drawn_cases(pending) == list(evaluation.task.benchmarks)
    evaluation.close()


def test_the_core_draws_in_every_timed_mode_on_a_gpu(monkeypatch):
    """Issue 38: benchmark mode (and leaderboard mode without a secret, and the default) times the inputs
    ranked mode does, drawn by the core into the captured graph's buffers; sanitize and profile modes, the
    CPU and an install without the core keep the worker's own draw."""
    monkeypatch.setattr(seal, "sealed_core_built", lambda: True)
    assert {name for name, mode in MODES.items() if core_draws(mode, "cuda")} == {"all", "benchmark", "leaderboard"}
    assert not any(core_draws(mode, "cpu") for mode in MODES.values())
    monkeypatch.setattr(seal, "sealed_core_built", lambda: False)
    assert not any(core_draws(mode, "cuda") for mode in MODES.values())
