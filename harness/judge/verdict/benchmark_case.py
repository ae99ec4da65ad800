"""One benchmark case: warm-up, timed calls until the stopping rule says enough, the verdict.

Every timed output is checked (``CallChecker``); the event overhead is measured for the case before
its timed calls (the value they subtract) and rechecked after them; a case whose calls read short
against the GPU's own clock (``second_clock``) is rejected, and so is a time under the datasheet
ceiling (it cannot be real).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from harness.contract import long_lived
from harness.contract.results import CaseResult, Status
from harness.judge.verdict import second_clock
from harness.judge.verdict.call_checker import CallChecker
from harness.judge.verdict.queued_sleep import MIN_QUEUED_SLEEP_US, QueuedSleep
from harness.judge.verdict.stopping import WARMUP_RULE, StoppingRule, summarize
from harness.judge.verdict.wall_clock import WallClock
from harness.judge.worker_link import seal
from harness.judge.worker_link.worker_channel import WorkerSession

OWN_OVERHEAD_ATTEMPTS = 3  # as the worker's first measurement (gpu_window.c: init_gpu)


@dataclass
class BenchmarkCase:
    """What timing one case needs besides the worker: the checker, the rule, limits and bounds."""

    checker: CallChecker
    rule: StoppingRule
    timeouts_s: dict[str, float]
    timer_method: str
    profiled: bool
    on_gpu: bool
    clock: WallClock

    def run(self, session: WorkerSession, case: dict[str, Any], sol_us: float | None, ceiling_us: float | None,
            note: Any) -> CaseResult:
        """Time ``case``; ``sol_us`` / ``ceiling_us``: its speed of light and datasheet ceiling, if known."""
        limit, clock = self.timeouts_s, self.clock
        started = time.perf_counter()
        with clock.phase("warmup"):
            self.checker.checked_call(session, case, 0, 0.0, "the first call (warm-up, JIT)", limit["warmup"],
                                      prefetch=True)
            warmup_s = time.perf_counter() - started
            host_us, times_us = [], []
            warm_calls = session.warm_calls(case)  # each placement of the inputs and each stream warm before timing
            while not WARMUP_RULE.done(times_us) or 1 + len(times_us) < warm_calls:  # and the kernel's time asks
                warm = self.checker.checked_call(session, case, 1 + len(times_us), MIN_QUEUED_SLEEP_US,
                                                 "a warm-up call", limit["call"], prefetch=True)
                host_us.append(warm.host_us)
                times_us.append(warm.time_us)
        # The queued sleep must outlast the host's launch of the call (the warm-up's slowest but the first).
        sleep = QueuedSleep.after_warmup(host_us)
        with clock.phase("recheck"):
            own = self._own_overhead(session, limit["call"])
        if own and not seal.overhead_consistent(*own[1:]):
            return CaseResult("benchmark", case, Status.HARNESS_FAULT,
                              f"the harness's event overhead measured for this case was inconsistent "
                              f"{OWN_OVERHEAD_ATTEMPTS} times (last {own[1]:.2f} us, spread {own[2]:.2f} us): refused; "
                              "nothing is blamed on the submission")
        overhead_us = session.overhead_us  # what the timed calls subtract: this case's own (their MACs cover it)
        with clock.phase("timed"):
            samples, readings, index, wall_s = self._timed_loop(session, case, 1 + len(times_us), sleep)
        with clock.phase("recheck"):
            drift = session.recheck_overhead(limit["call"])
        if drift and seal.overhead_moved(*drift, session.first_overhead_us)[0]:
            note(f"harness fault: event overhead {drift[0]:.2f} us before the timed calls, {drift[1]:.2f} us after "
                 f"(spread {drift[2]:.2f} us); measuring this case again")
            overhead_us = session.overhead_us
            with clock.phase("timed"):
                samples, readings, index, wall_s = self._timed_loop(session, case, index, sleep)
            with clock.phase("recheck"):
                drift = session.recheck_overhead(limit["call"])
            if drift and seal.overhead_moved(*drift, session.first_overhead_us)[0]:
                return CaseResult("benchmark", case, Status.HARNESS_FAULT,
                                  f"the harness's event overhead moved twice ({drift[0]:.2f} -> {drift[1]:.2f} us): "
                                  "its timing of this GPU is not trustworthy now; nothing is blamed on the submission")
        stats = summarize(samples, self.timer_method)
        profile = None
        if self.profiled:
            with clock.phase("profile"):
                profile = session.profile({**case, "seed": self.checker.call_seed(case, index)}, limit["call"])
        calls = max(1, self.checker.phase_calls)
        exposed = f"; {sleep.summary()}" if sleep.exposed else ""
        split, worker_split = self.checker.per_call()
        outcome = CaseResult("benchmark", case, Status.PASSED,
                             f"{stats.runs} timed calls, every output checked{exposed}",
                             timing=stats, warmup_s=warmup_s, profile=profile,
                             overhead_ms=1e3 * wall_s / calls - stats.median_us / 1e3,  # per call made, as the split
                             overhead_split_ms=split, worker_split_ms=worker_split,
                             queued_sleep_us=sleep.us, exposed_calls=sleep.exposed, event_overhead_us=overhead_us,
                             second_clock_us=second_clock.median_us(readings))
        if sol_us:
            outcome.sol_us = sol_us
            outcome.pct_of_sol = 100.0 * sol_us / stats.median_us if stats.median_us > 0 else math.inf
        disagreement = second_clock.disagreement(readings)
        if disagreement:
            outcome.status, outcome.reason = Status.REJECTED, disagreement
        elif self.on_gpu and ceiling_us and stats.median_us < ceiling_us:
            outcome.status = Status.REJECTED
            outcome.reason = (f"median {stats.median_us:.2f} us is faster than the device's datasheet peaks allow "
                              f"({ceiling_us:.2f} us), with the harness's own measurement rechecked: the timing "
                              "cannot be real")
        return outcome

    @staticmethod
    def _own_overhead(session: WorkerSession, timeout_s: float) -> tuple[float, float, float] | None:
        """The case's own event overhead, measured after its warm-up (the core and the parent adopt a
        consistent one; an inconsistent one is refused and measured again): (in use, fresh, spread)."""
        own = None
        for _ in range(OWN_OVERHEAD_ATTEMPTS):
            own = session.recheck_overhead(timeout_s)
            if not own or seal.overhead_consistent(*own[1:]):
                break
        return own

    def _timed_loop(self, session: WorkerSession, case: dict[str, Any], index: int,
                    sleep: QueuedSleep) -> tuple[list[float], list[seal.ClockReading], int, float]:
        """Timed calls until the stopping rule says enough, or the loop's own limit (task.yml
        timeouts_s.benchmark, from the loop's start: a long compile before it takes nothing from it)
        once a time was taken: (times in us, their second-clock readings, the next call index, wall s)."""
        samples: list[float] = []
        readings: list[seal.ClockReading] = []
        self.checker.reset_phases()
        loop_start = time.perf_counter()
        with long_lived.CollectorClock() as collector:  # the parent's garbage collection inside the loop
            while not self.rule.done(samples, time.perf_counter() - loop_start):
                if samples and time.perf_counter() - loop_start > self.timeouts_s["benchmark"]:
                    break
                result = self.checker.checked_call(session, case, index, sleep.us, "a timed call",
                                                   self.timeouts_s["call"], prefetch=True)
                index += 1
                if sleep.counts(result.host_us, result.exposed):
                    samples.append(result.time_us)
                    readings.append(result.clock)
        self.checker.book("collector", collector.ms)  # inside the other phases, not beside them
        return samples, readings, index, time.perf_counter() - loop_start
