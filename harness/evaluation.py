"""One submission, one mode, driven case by case: the trusted side of an evaluation.

``Evaluation`` tells the worker which call to make (case, seed, queued sleep), computes every
expected output itself from the same seed, checks every output (timed ones included), applies the
stopping rule, and decides what a failure means: the submission's bug, this machine's lack
(``unsupported``), or a reason to stop early (fail fast). ``harness.evaluate`` wraps it in the
``eval`` command.
"""

from __future__ import annotations

import importlib
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from harness import hardware, report, seal, seeds, timing
from harness.progress import Progress
from harness.results import CaseResult, Status
from harness.runner import CallOutput, WorkerFailure, WorkerSession
from harness.sol import UnknownDeviceError, breakdown
from harness.task import Task, shape_text

WARMUP_CALLS = 3

SAME_FAILURE_LIMIT = 2
"""Fail fast: when this many first cases fail for the same reason, the rest are not run."""


class Evaluation:
    """One submission, one mode: drives the worker and judges every output."""

    def __init__(
        self,
        task: Task,
        submission: Path,
        mode: str,
        device: str,
        secret: int | None,
        visible_devices: str | None,
        progress: Progress,
        device_info: dict[str, Any],
        keep_going: bool = False,
    ) -> None:
        self.task = task
        self.device_info = device_info
        self.keep_going = keep_going
        self.source = submission.read_text(errors="replace")
        self.submission = submission
        self.mode = mode
        self.device = device
        self.secret = secret
        self.visible_devices = visible_devices
        self.progress = progress
        self.reference: ModuleType = importlib.import_module(task.reference_module)
        # The parent checks on the GPU the worker was given, so parallel runs stay apart.
        self.check_device = torch.device("cuda", gpu_index(visible_devices)) if device == "cuda" else torch.device(
            "cpu")
        if device == "cpu":
            self.rule = timing.CPU_RULE
        else:
            self.rule = timing.LEADERBOARD_RULE if mode == "leaderboard" else timing.BENCHMARK_RULE
        self.device_name = torch.cuda.get_device_name(self.check_device) if device == "cuda" else "cpu"
        self.stdout_tail = ""
        self.timer_method = ""
        self._generator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inputs")
        self._phases_ms: dict[str, float] = {}  # where the harness's time per timed call goes
        self._phase_calls = 0

    def close(self) -> None:
        """Stop the thread that draws the parent's copies of the inputs."""
        self._generator.shutdown(cancel_futures=True)

    # -- checking -----------------------------------------------------------------------
    def check(self, inputs: Any, result: CallOutput) -> tuple[bool, str]:
        """Judge one output against the reference on the same inputs (the parent's own copy)."""
        if isinstance(result.output, str):
            return False, result.output
        if result.unfinished:
            return False, (
                "the output changed after custom_kernel returned: work left running on another stream "
                "(make the caller's stream wait for it)"
            )
        return self.reference.check_implementation(inputs, result.output)

    def sol_us(self, case: dict[str, Any], convention: str | None = None) -> float | None:
        """Speed of light in us (the contest convention unless named; 'datasheet' is the physical ceiling)."""
        try:
            return breakdown(self.task.directory.name, case, self.device_name, convention).seconds * 1e6
        except UnknownDeviceError:
            return None

    # -- one case -----------------------------------------------------------------------
    def _seed(self, case: dict[str, Any], index: int) -> int:
        return seeds.call_seed(case["seed"], index, self.secret)

    def _checked_call(self, session: WorkerSession, case: dict[str, Any], index: int, sleep_us: float,
                      stage: str, timeout_s: float, prefetch: bool = False) -> CallOutput:
        """One call and its check; ``prefetch``: the worker draws call index+1's inputs meanwhile."""
        seeded = {**case, "seed": self._seed(case, index)}
        plain = self.mode == "sanitize"
        # On the GPU the parent's copy of the inputs, the reference and the check run only after the
        # worker has answered, and the next call is sent only once they are done: none of this
        # overlaps a timed call. On the CPU (never ranked) the copy is drawn on a thread meanwhile.
        drawing = None if self.check_device.type == "cuda" else self._generator.submit(
            self.reference.generate_input, **seeded, device="cpu")
        started = time.perf_counter()
        result = session.call(seeded, sleep_us, stage, timeout_s, plain)
        called = time.perf_counter()
        if prefetch:  # the worker draws the next call's inputs (untimed) while this one is checked
            session.prepare({**case, "seed": self._seed(case, index + 1)})
        inputs = drawing.result() if drawing else self.reference.generate_input(**seeded, device=self.check_device)
        drawn = time.perf_counter()
        ok, message = self.check(inputs, result)
        for phase, ms in (("worker", 1e3 * (called - started) - result.time_us / 1e3),
                          ("inputs", 1e3 * (drawn - called)), ("check", 1e3 * (time.perf_counter() - drawn))):
            self._phases_ms[phase] = self._phases_ms.get(phase, 0.0) + ms
        self._phase_calls += 1
        if not ok:
            raise WorkerFailure(Status.FAILED, f"{stage} (call {index}): {message}")
        return result

    def run_test(self, session: WorkerSession, case: dict[str, Any]) -> CaseResult:
        started = time.perf_counter()
        self._checked_call(session, case, 0, 0.0, "a test", self.task.timeouts_s["test"])
        return CaseResult("test", case, Status.PASSED, f"passed in {time.perf_counter() - started:.1f} s")

    def run_benchmark(self, session: WorkerSession, case: dict[str, Any]) -> CaseResult:
        limit = self.task.timeouts_s
        started = time.perf_counter()
        first = self._checked_call(session, case, 0, 0.0, "the first call (warm-up, JIT)", limit["warmup"],
                                   prefetch=True)
        warmup_s = time.perf_counter() - started
        host_us = [first.host_us]
        for index in range(1, WARMUP_CALLS):
            warm = self._checked_call(session, case, index, timing.MIN_QUEUED_SLEEP_US, "warm-up", limit["warmup"],
                                      prefetch=True)
            host_us.append(warm.host_us)
        # The queued sleep must outlast the host's launch of the call (the warm-up's slowest but the first).
        sleep = timing.QueuedSleep.after_warmup(host_us[1:])
        samples, index, wall_s = self._timed_loop(session, case, WARMUP_CALLS, sleep, started)
        drift = session.recheck_overhead(limit["warmup"])
        if drift and seal.overhead_moved(*drift)[0]:
            self.progress.note(f"harness fault: event overhead {drift[0]:.2f} us at the start, {drift[1]:.2f} us now "
                               f"(spread {drift[2]:.2f} us); measuring this case again")
            samples, index, wall_s = self._timed_loop(session, case, index, sleep, time.perf_counter())
            drift = session.recheck_overhead(limit["warmup"])
            if drift and seal.overhead_moved(*drift)[0]:
                return CaseResult("benchmark", case, Status.HARNESS_FAULT,
                                  f"the harness's event overhead moved twice ({drift[0]:.2f} -> {drift[1]:.2f} us): "
                                  "its timing of this GPU is not trustworthy now; nothing is blamed on the submission")
        stats = timing.summarize(samples, self.timer_method)
        profile = session.profile({**case, "seed": self._seed(case, index)}, limit["warmup"]) if (
            self.mode == "profile") else None
        calls = max(1, self._phase_calls)
        exposed = f"; {sleep.summary()}" if sleep.exposed else ""
        outcome = CaseResult("benchmark", case, Status.PASSED,
                             f"{stats.runs} timed calls, every output checked{exposed}",
                             timing=stats, warmup_s=warmup_s, profile=profile,
                             overhead_ms=1e3 * wall_s / calls - stats.median_us / 1e3,  # per call made, as the split
                             overhead_split_ms={k: round(v / calls, 3) for k, v in self._phases_ms.items()},
                             queued_sleep_us=sleep.us, exposed_calls=sleep.exposed)
        sol_us, ceiling_us = self.sol_us(case), self.sol_us(case, "datasheet")
        if sol_us:
            outcome.sol_us = sol_us
            outcome.pct_of_sol = 100.0 * sol_us / stats.median_us if stats.median_us > 0 else math.inf
        if self.device == "cuda" and ceiling_us and stats.median_us < ceiling_us:
            outcome.status = Status.REJECTED
            outcome.reason = (f"median {stats.median_us:.2f} us is faster than the device's datasheet peaks allow "
                              f"({ceiling_us:.2f} us), with the harness's own measurement rechecked: the timing "
                              "cannot be real")
        return outcome

    def _timed_loop(self, session: WorkerSession, case: dict[str, Any], index: int, sleep: timing.QueuedSleep,
                    started: float) -> tuple[list[float], int, float]:
        """Timed calls until the stopping rule says enough: (times in us, the next call index, wall s)."""
        samples: list[float] = []
        self._phases_ms, self._phase_calls = {}, 0
        loop_start = time.perf_counter()
        while not self.rule.done(samples, time.perf_counter() - loop_start):
            if time.perf_counter() - started > self.task.timeouts_s["benchmark"]:
                break
            result = self._checked_call(session, case, index, sleep.us, "a timed call",
                                        self.task.timeouts_s["benchmark"], prefetch=True)
            index += 1
            if sleep.counts(result.host_us, result.exposed):
                samples.append(result.time_us)
        return samples, index, time.perf_counter() - loop_start

    # -- the run ------------------------------------------------------------------------
    def judged_failure(self, kind: str, case: dict[str, Any], failure: WorkerFailure) -> CaseResult:
        """A failed case; 'unsupported' when the failure is this machine's lack, not a bug."""
        if failure.status in (Status.CRASHED, Status.CUDA_ERROR, Status.BAD_INPUT):
            need = hardware.diagnose(failure.reason, self.source, self.device_info)
            if need:
                return CaseResult(kind, case, Status.UNSUPPORTED, need)
        return CaseResult(kind, case, failure.status, failure.reason)

    def stop_reason(self, results: list[CaseResult]) -> str | None:
        """Why the remaining cases should not run, or None to go on."""
        last = results[-1]
        if last.status == Status.UNSUPPORTED:
            return f"not run: {last.reason.split(':')[0]}"
        recent = results[-SAME_FAILURE_LIMIT:]
        if self.keep_going or len(recent) < SAME_FAILURE_LIMIT:
            return None
        if any(r.status in (Status.PASSED, Status.NOT_RUN) for r in recent):
            return None
        if len({(r.status, _failure_key(r.reason)) for r in recent}) == 1:
            return f"not run: the previous {SAME_FAILURE_LIMIT} cases failed the same way (--keep-going runs them all)"
        return None


    def run(self, cases: list[tuple[str, dict[str, Any]]]) -> list[CaseResult]:
        results: list[CaseResult] = []
        pending = list(cases)
        self.progress.begin(len(cases), self.submission.name)
        announced = False
        while pending:
            with WorkerSession(self.task, self.submission, self.device, self.visible_devices) as session:
                try:
                    ready = session.start()
                except WorkerFailure as failure:
                    self.stdout_tail = session.output_tail()
                    results.append(self.judged_failure(*pending.pop(0), failure))
                    self.progress.step(f"import failed: {results[-1].reason}")
                    results += [CaseResult(k, c, Status.NOT_RUN, "not run: the submission did not import")
                                for k, c in pending]
                    return results
                self.timer_method = ready["timer"]
                if not announced:
                    self.progress.note(f"imported in {ready['import_s']:.1f} s; timing: {self.timer_method}")
                    sandbox = dict(ready.get("sandbox") or {})
                    self.progress.note("sandbox: " + "; ".join(f"{k} {v}" for k, v in sandbox.items()))
                    announced = True
                while pending:
                    kind, case = pending.pop(0)
                    label = f"{kind} {shape_text(case)}"
                    self.progress.working(label)
                    try:
                        outcome = self.run_test(session, case) if kind == "test" else self.run_benchmark(session, case)
                    except WorkerFailure as failure:
                        outcome = self.judged_failure(kind, case, failure)
                    results.append(outcome)
                    self.progress.step(f"[{len(results)}/{len(cases)}] {label}: {report.case_summary(outcome)}")
                    stop = self.stop_reason(results)
                    if stop:
                        if pending:
                            self.progress.note(f"{len(pending)} case(s) {stop}")
                        results += [CaseResult(k, c, Status.NOT_RUN, stop) for k, c in pending]
                        pending = []
                    elif session.process is None or session.process.poll() is not None:
                        break  # the worker died with this case; a fresh one takes the rest
                self.stdout_tail = session.output_tail()
        return results


def _failure_key(reason: str) -> str:
    """A failure's reason without its numbers: two shapes failing the same way compare equal."""
    return re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "#", reason)


def gpu_index(visible_devices: str | None) -> int:
    """The parent's index of the one GPU a worker is given through CUDA_VISIBLE_DEVICES."""
    return int(visible_devices) if visible_devices and visible_devices.strip().isdigit() else 0
