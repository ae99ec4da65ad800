"""A benchmark case's measurement against a scripted worker: the overhead the parent checks, rechecks and
subtracts, exposed calls and the queued sleep, the second clock (harness/judge/verdict/evaluation.py with
the parent's own session over a stand-in core, on the CPU)."""

import os
import types
from pathlib import Path

import pytest

from harness.contract.messages import Rechecked
from harness.contract.results import Status
from harness.contract.task_spec import load_task
from harness.display.progress import as_progress
from harness.judge.verdict import queued_sleep
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions
from harness.judge.worker_link import seal, worker_spawn
from harness.judge.worker_link.call_output import CallOutput
from harness.judge.worker_link.worker_channel import WorkerSession

REPO = Path(__file__).resolve().parent.parent


def _benchmark_against(make_session):
    """One CPU benchmark case of the GEMV baseline driven against a scripted worker stand-in."""
    from harness.judge.verdict.evaluation import Evaluation

    task = load_task("nvfp4_gemv").with_timeouts_scaled(1.0)
    baseline = REPO / "submissions/nvfp4_gemv/torch_reference.py"
    evaluation = Evaluation(task, baseline, MODES["benchmark"], "cpu", RunOptions(), as_progress(None),
                            {"type": "cpu"})
    session = make_session(evaluation.reference)
    try:
        return evaluation.run_benchmark(session, dict(task.cpu_tests[0])), session
    finally:
        evaluation.close()


RAW_EVENT_US = 10.0
"""What every call's event pair reads in the stand-in: its time is this minus the overhead the core holds."""


class _RecheckingSession(WorkerSession):
    """The parent's own session (its recheck: MAC check, the in-use check, adoption) over a scripted core.

    Each recheck answers the next (fresh, spread) of ``rechecks``, signed under the run's key; the core
    adopts a consistent one no higher than its first plus 0.1 us (as sealed.c's recheck does), and each
    call's time is RAW_EVENT_US minus the overhead the core holds, the value its MAC covers."""

    def __init__(self, reference, rechecks, first_us=2.4):
        super().__init__(load_task("nvfp4_gemv"), REPO / "submissions/nvfp4_gemv/torch_reference.py", "cpu")
        self.reference, self.rechecks, self.timed_loops = reference, list(rechecks), 0
        self.worker.spawned = types.SimpleNamespace(key=os.urandom(worker_spawn.KEY_BYTES), process=None)  # no process
        self.sealed, self.overhead_us, self.core_us = True, first_us, first_us  # the worker's first measurement
        self.first_overhead_us = first_us
        self.subtracted = set()  # the overheads the calls' times subtracted
        self._nonce = b""

    def _request(self, request):
        self._nonce = request.nonce

    def _expect(self, kind, stage, timeout_s):
        fresh_us, spread_us = self.rechecks.pop(0)
        self.timed_loops += 1
        mac = seal.recheck_mac(self.worker.key, self._nonce, self.core_us, fresh_us, spread_us)
        answer = Rechecked(overhead_us=self.core_us, fresh_us=fresh_us, spread_us=spread_us, mac=mac)
        if (0.0 <= fresh_us <= seal.OVERHEAD_MAX_US and spread_us <= seal.OVERHEAD_SPREAD_MAX_US
                and fresh_us <= self.first_overhead_us + seal.OVERHEAD_RAISE_MAX_US):
            self.core_us = fresh_us
        return answer, None

    def call(self, case, sleep_us, stage, timeout_s, plain=False, buffers="", answered=None, staged=None,
             drawn_seed=None, answer_early=False):
        assert self.core_us == self.overhead_us, "the call's MAC would not check: parent and core disagree"
        data = self.reference.generate_input(**case, device="cpu")
        if stage == "a timed call":
            self.subtracted.add(self.core_us)
        return CallOutput(time_us=RAW_EVENT_US - self.core_us, host_us=1.0, output=self.reference.ref_kernel(data),
                          unfinished=False)

    def prepare(self, case):
        pass  # inputs are drawn in call()


@pytest.mark.parametrize(("rechecks", "status", "loops"), [
    ([(2.5, 0.1), (2.6, 0.1)], Status.PASSED, 2),  # before the case, then after it
    ([(2.4, 0.1), (1.6, 0.1), (1.7, 0.1)], Status.PASSED, 3),  # moved once: measured again, then steady
    ([(2.4, 0.1), (1.6, 0.1), (0.8, 0.1)], Status.HARNESS_FAULT, 3),  # moved twice: the harness's fault
    ([(2.4, 0.1), (4.0, 0.1), (4.1, 0.1)], Status.HARNESS_FAULT, 3),  # a raise is never adopted: it stays moved
])
def test_an_overhead_that_moves_is_a_harness_fault_measured_again_never_the_submissions(rechecks, status, loops):
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, rechecks))
    assert outcome.status == status and session.timed_loops == loops
    if status == Status.HARNESS_FAULT:
        assert "nothing is blamed on the submission" in outcome.reason


def test_a_case_subtracts_the_overhead_measured_for_it_not_the_workers_first():
    # The worker's first measurement was unlucky (2.9 us); the case measures 2.2 us before its calls.
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [(2.2, 0.1), (2.3, 0.1)],
                                                                               first_us=2.9))
    assert outcome.status == Status.PASSED and session.subtracted == {2.2}
    assert outcome.event_overhead_us == 2.2 and outcome.timing.median_us == pytest.approx(RAW_EVENT_US - 2.2)


def test_a_case_never_subtracts_a_measurement_raised_above_the_workers_first():
    # A submission that keeps the GPU busy while the core measures lengthens the measurement; subtracting
    # it would shorten every timed call. The case keeps the first value (taken before the import).
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [(3.4, 0.1), (2.4, 0.1)],
                                                                               first_us=2.4))
    assert outcome.status == Status.PASSED and session.subtracted == {2.4}


@pytest.mark.parametrize("refused", [(2.2, 0.9), (11.0, 0.1), (-0.5, 0.1)])  # rounds disagree; out of bounds
def test_an_inconsistent_measurement_for_a_case_is_refused_and_measured_again(refused):
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [refused, (2.2, 0.1),
                                                                                           (2.3, 0.1)], first_us=2.9))
    assert outcome.status == Status.PASSED and session.subtracted == {2.2}  # never the refused value
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [refused] * 3, first_us=2.9))
    assert outcome.status == Status.HARNESS_FAULT and "refused" in outcome.reason and not session.subtracted


class _ExposingSession(_RecheckingSession):
    """Timed calls (not the warm-up) launch for 300 us: exposed until the queued sleep outlasts that."""

    def __init__(self, reference, always=False):
        super().__init__(reference, [(2.5, 0.1)] * 2)
        self.always = always

    def call(self, case, sleep_us, stage, timeout_s, plain=False, buffers="", answered=None, staged=None,
             drawn_seed=None, answer_early=False):
        output = super().call(case, sleep_us, stage, timeout_s, plain, answered=answered)
        if stage != "a timed call":
            return output
        output.host_us = 300.0
        output.exposed = self.always or sleep_us < 300.0
        output.time_us = 999.0 if output.exposed else 5.0
        return output


@pytest.mark.parametrize("always", [False, True])
def test_exposed_calls_raise_the_sleep_and_never_count_until_the_retries_are_spent(always):

    outcome, _ = _benchmark_against(lambda reference: _ExposingSession(reference, always))
    assert outcome.status == Status.PASSED
    if always:  # a call that waits for the GPU inside: exposed at any sleep, accepted after the retries,
        # at the sleep it started with (a longer one would only cost wall time)
        assert outcome.exposed_calls > queued_sleep.EXPOSED_RETRIES and outcome.timing.max_us == 999.0
        assert outcome.queued_sleep_us < 620.0
    else:
        assert outcome.exposed_calls == 1 and outcome.timing.max_us == 5.0
        assert outcome.queued_sleep_us >= 620.0  # 2 x 300 us + the floor
    assert "exposed" in outcome.reason and {"draw", "check", "collector"} <= set(outcome.overhead_split_ms)


class _ClockSession(_RecheckingSession):
    """Timed calls carry a signed second-clock reading: each ``gaps_us[i % len]`` apart, 2 us allowed."""

    def __init__(self, reference, gaps_us):
        super().__init__(reference, [(2.4, 0.1), (2.4, 0.1)])  # before the case, after it
        self.gaps_us, self.timed = gaps_us, 0

    def call(self, case, sleep_us, stage, timeout_s, plain=False, buffers="", answered=None, staged=None,
             drawn_seed=None, answer_early=False):
        output = super().call(case, sleep_us, stage, timeout_s, plain, answered=answered)
        if stage == "a timed call":
            gap = self.gaps_us[self.timed % len(self.gaps_us)]
            output.clock = seal.ClockReading(event_us=5.0, clock_us=5.5 + gap, gap_us=gap, allowance_us=2.0)
            self.timed += 1
        return output


@pytest.mark.parametrize(("gaps_us", "status"), [
    ([5.9] + [0.3] * 9, Status.PASSED),  # an isolated honest outlier (the H100's GEMV, one call in ~300)
    ([2.5], Status.REJECTED),  # a start event recorded again on every call
])
def test_the_parent_rejects_a_case_whose_calls_read_short_against_the_second_clock(gaps_us, status):
    outcome, _ = _benchmark_against(lambda reference: _ClockSession(reference, gaps_us))
    assert outcome.status == status
    assert outcome.second_clock_us == pytest.approx(5.5 + sorted(gaps_us)[len(gaps_us) // 2])  # the median window
    if status == Status.REJECTED:
        assert "the GPU's own clock and the timer's events disagree on" in outcome.reason
