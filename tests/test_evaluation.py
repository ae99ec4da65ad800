"""The evaluation's order of events: the parent's first use of its own kernels beside the first test."""

import threading
import time
from pathlib import Path

from harness.contract.results import Status
from harness.contract.task_spec import load_task
from harness.display.progress import as_progress
from harness.judge.verdict.evaluation import Evaluation
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions

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
    checked_call, first_use = evaluation.checker.checked_call, evaluation._first_use

    def call(session, case, index, *args, **kwargs):
        events.append(f"call {case['m']} starts")
        in_flight.set()
        try:
            return checked_call(session, case, index, *args, **kwargs)
        finally:
            events.append(f"call {case['m']} ends")

    def warm(seeded):
        events.append(f"first use {seeded['m']} beside a call: {in_flight.wait(10)}")
        time.sleep(1.0)  # a slow compile: the next case must still wait for it
        first_use(seeded)
        events.append("first use done")

    evaluation.checker.checked_call, evaluation._first_use = call, warm
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
