"""One submission, one mode, driven case by case: the trusted side of an evaluation.

``Evaluation`` starts workers, hands each case to the test check or to ``BenchmarkCase``, and
decides what a failure means: the submission's bug, this machine's lack (``unsupported``), or a
reason to stop early (fail fast). ``CallChecker`` makes and judges each call; sanitize mode uses
the same checker through ``Evaluation.checker`` and ``Evaluation.session``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from harness.contract import long_lived, messages
from harness.contract.results import CaseResult, Status
from harness.contract.task_spec import PROBLEMS_DIR, Task, case_text, load_task
from harness.display import report
from harness.display.progress import Progress
from harness.judge.verdict import hardware_verdict
from harness.judge.verdict.benchmark_case import BenchmarkCase
from harness.judge.verdict.call_checker import CallChecker
from harness.judge.verdict.modes import Mode
from harness.judge.verdict.run_options import RunOptions
from harness.judge.verdict.wall_clock import WallClock
from harness.judge.worker_link import seal
from harness.judge.worker_link.worker_channel import WorkerFailure, WorkerSession
from harness.sol.breakdown import DeviceTableError, UnknownDeviceError, breakdown

SAME_FAILURE_LIMIT = 2
"""Fail fast: when this many first cases fail for the same reason, the rest are not run."""
CPU_TEST_CALLS = 2
"""Calls per test shape on the CPU: the second gets new inputs written into the first call's
tensors, so an output cached by data_ptr() or id() fails here as it does among a GPU's timed calls
(the CPU runs no timed calls by default)."""
REPEAT_TEST = "the repeat test with new inputs in the same tensors"


class Evaluation:
    """One submission, one mode: drives workers case by case and judges every outcome."""

    def __init__(self, task: Task, submission: Path, mode: Mode, device: str, options: RunOptions,
                 progress: Progress, device_info: dict[str, Any]) -> None:
        self.task = task
        self.device_info = device_info
        self.keep_going = options.keep_going
        self.source = submission.read_text(errors="replace")
        self.submission = submission
        self.mode = mode
        self.device = device
        self.visible_devices = options.visible_devices
        self.cache_owner = options.cache_owner
        self.progress = progress
        # The parent checks on the GPU the worker was given, so parallel runs stay apart.
        check_device = torch.device("cuda", gpu_index(self.visible_devices)) if device == "cuda" else (
            torch.device("cpu"))
        self.checker = CallChecker(task, options.secret_seed, check_device, plain=mode.sanitized)
        self.core_draws = core_draws(mode, device)
        self.rule = mode.rule(device)
        self.device_name = torch.cuda.get_device_name(check_device) if device == "cuda" else "cpu"
        # The speed of light always uses the shipped problem's formula (a folder given by path may
        # change shapes and limits, not how it is scored), read once.
        shipped = PROBLEMS_DIR / task.directory.name
        self.sol_task = task if task.directory.resolve() == shipped.resolve() else load_task(task.directory.name)
        self.stdout_tail = ""
        self.timer_method = ""
        self.clock = WallClock()
        self.quiet_refusals: dict[str, tuple[int, str]] = {}  # syscalls refused without rejecting the run
        # The parent's own kernels warmed beside the worker's first test (warm_first_use); on the
        # CPU the checker already draws its copy on a thread while the worker runs.
        self.warms_first_use = device == "cuda"
        self.sends_ahead = device == "cuda"  # the next test sent while one is checked (``ahead``)
        self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="first-use")

    @property
    def reference(self) -> ModuleType:
        """The problem's reference module, as the parent loaded it (inputs, expected outputs, check)."""
        return self.checker.reference

    def close(self) -> None:
        self.checker.close()
        self._warmer.shutdown(wait=True, cancel_futures=True)

    def warm_first_use(self, case: dict[str, Any]) -> Future | None:
        """The parent's first use of its own kernels (the input draw's and the reference's: Triton
        compiles or loads them, 0.6-1.5 s on the H100, docs/results.md run 14) moved off the critical
        path: the first test's inputs and expected output computed on a thread while the worker runs
        that test, which pays its own first use meanwhile; its check takes them (``expect_early``).
        Only after the worker's Ready (its timing core has measured its overhead) and only beside a
        test, whose time decides nothing; joined before the next case (``join_first_use``), so it
        never overlaps a warm-up or timed call. A failure here is left for the check to meet."""
        if not self.warms_first_use:
            return None
        return self.checker.expect_early(case, self._warmer)

    def join_first_use(self, warming: Future | None) -> None:
        """Wait for ``warm_first_use``'s thread (booked to the tests it ran beside); its error is dropped."""
        if warming is not None:
            with self.clock.phase("tests"):
                warming.exception()

    @contextlib.contextmanager
    def session(self, command_prefix: list[str] | None = None, timeout_scale: float = 1.0,
                keep_uid: bool = False, unsealed: bool = False) -> Iterator[WorkerSession]:
        """A fresh worker for this submission (``command_prefix`` wraps it, e.g. compute-sanitizer;
        ``timeout_scale`` widens its stage limits; ``keep_uid``: no uid drop, and ``unsealed``: no
        compiled core, both for Nsight Compute, which breaks the core's graph-based start);
        what it printed is kept as the run's ``stdout_tail`` when it ends."""
        task = self.task.with_timeouts_scaled(timeout_scale)
        session = WorkerSession(task, self.submission, self.device, self.visible_devices, command_prefix,
                                keep_uid, unsealed, self.cache_owner)
        session.check_on = self.checker.check_device if self.checker.check_device.type == "cuda" else None
        with self.clock.phase("worker_start"):
            session.spawn()
        # A worker started before this file (blank_workers): the span it had already run, overlapped
        # with the parent's start or the previous file; part of no phase (the wall time did not pay it).
        if session.worker.head_start_s:
            self.clock.add("worker_head_start", session.worker.head_start_s)
        try:
            yield session
        finally:
            self.stdout_tail = session.output_tail()
            with self.clock.phase("close"):
                session.close()
            notifications, seconds = session.worker.supervision.counts()
            if notifications:  # what the syscall supervisor cost (the report's wall-time line)
                self.clock.add("supervisor", seconds)
                self.clock.add("supervisor_notifications", notifications)
            for name, (count, detail) in session.worker.supervision.quiet_refusals().items():
                self.quiet_refusals[name] = (self.quiet_refusals.get(name, (0, detail))[0] + count, detail)

    def sol_us(self, case: dict[str, Any], convention: str | None = None) -> float | None:
        """Speed of light in us (the contest convention unless named; 'datasheet' is the physical ceiling)."""
        try:
            return breakdown(self.sol_task, case, self.device_name, convention).seconds * 1e6
        except (UnknownDeviceError, DeviceTableError):  # no figure for this GPU: the report shows '-'
            return None

    @property
    def test_calls(self) -> int:
        return CPU_TEST_CALLS if self.device == "cpu" else 1

    @property
    def first_test_buffers(self) -> str:
        """A test's first call keeps its input tensors where a second call refills them."""
        return "keep" if self.test_calls > 1 else ""

    def run_test(self, session: WorkerSession, case: dict[str, Any], then: Callable[[], None] | None = None,
                 ) -> CaseResult:
        """The test of one shape: one checked call; on the CPU a second one with new inputs written
        into the first call's tensors (CPU_TEST_CALLS), which a GPU's timed calls do by themselves.
        ``then``: run once the test's reply is in, before its check (the next test sent ahead)."""
        started = time.perf_counter()
        calls = self.test_calls
        with self.clock.phase("tests"):
            self.checker.checked_call(session, case, 0, 0.0, "the test", self.task.timeouts_s["test"],
                                      buffers=self.first_test_buffers, then=then if calls == 1 else None)
            for index in range(1, calls):
                self.checker.checked_call(session, case, index, 0.0, REPEAT_TEST, self.task.timeouts_s["call"],
                                          buffers="refill", then=then if index == calls - 1 else None)
        spent = f"passed in {time.perf_counter() - started:.1f} s"
        return CaseResult("test", case, Status.PASSED, spent + (f" ({calls} calls)" if calls > 1 else ""))

    def run_benchmark(self, session: WorkerSession, case: dict[str, Any]) -> CaseResult:
        bench = BenchmarkCase(self.checker, self.rule, self.task.timeouts_s, self.timer_method, self.mode.profiled,
                              on_gpu=self.device == "cuda", clock=self.clock)
        return bench.run(session, case, self.sol_us(case), self.sol_us(case, "datasheet"), self.progress.note)

    def judged_failure(self, kind: str, case: dict[str, Any], failure: WorkerFailure) -> CaseResult:
        """A failed case; 'unsupported' when the failure is this machine's lack, not a bug."""
        if failure.status in (Status.CRASHED, Status.CUDA_ERROR, Status.BAD_INPUT):
            need = hardware_verdict.diagnose(failure.reason, self.source, self.device_info)
            if need:
                return CaseResult(kind, case, Status.UNSUPPORTED, need, traceback=failure.traceback or None)
        return CaseResult(kind, case, failure.status, failure.reason, traceback=failure.traceback or None)

    def stop_reason(self, results: list[CaseResult]) -> str | None:
        """Why the remaining cases should not run, or None to go on."""
        last = results[-1]
        if last.status == Status.UNSUPPORTED:
            return f"not run: {last.reason.split(':')[0]}"
        if last.status == Status.TIMEOUT and not self.keep_going:  # each further hang would cost a whole limit
            return "not run: the previous case hung until its time limit (--keep-going runs them all)"
        recent = results[-SAME_FAILURE_LIMIT:]
        if self.keep_going or len(recent) < SAME_FAILURE_LIMIT:
            return None
        if any(r.status in (Status.PASSED, Status.NOT_RUN) for r in recent):
            return None
        if len({(r.status, _failure_key(r.reason)) for r in recent}) == 1:
            return f"not run: the previous {SAME_FAILURE_LIMIT} cases failed the same way (--keep-going runs them all)"
        return None

    def drawn_cases(self, pending: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]] | None:
        """The cases whose inputs a GPU worker's core draws (``core_draws``; captured at its Start, about
        50 ms a shape on the H100): the timed ones, benchmarks; None where the worker draws every call itself."""
        return [case for kind, case in pending if kind == "benchmark"] if self.core_draws else None

    def ahead(self, session: WorkerSession, kind: str, pending: list[tuple[str, dict[str, Any]]],
              sent: list[dict[str, Any]]) -> Callable[[], None] | None:
        """On the GPU (``sends_ahead``), a test followed by a test: what sends the next one once this one's reply is in,
        so the worker runs it while the parent draws, computes and checks this one's expected output
        (tests are not timed; the two may share the GPU). Verdicts keep their order: each test's is
        decided by its own run_test; a stop discards the one in flight with the worker. Only where
        the worker is alive when the reply is in (a worker dying after it is left to a fresh one)."""
        if not self.sends_ahead or kind != "test" or not pending or pending[0][0] != "test":
            return None
        following = pending[0][1]

        def send() -> None:
            if session.alive() and self.checker.send_ahead(session, following, self.task.timeouts_s["test"],
                                                           self.first_test_buffers):
                sent.append(following)

        return send

    def run(self, cases: list[tuple[str, dict[str, Any]]]) -> list[CaseResult]:
        long_lived.freeze_once()  # the process's imports and setup out of every later full collection's way
        results: list[CaseResult] = []
        pending = list(cases)
        self.checker.share_draws([case for _, case in cases], CPU_TEST_CALLS)  # a case listed twice: drawn once
        self.progress.begin(len(cases), self.submission.name)
        announced = False
        warming: Future | None = None
        while pending:
            with self.session() as session:
                try:
                    with self.clock.phase("worker_start"):
                        ready = session.start(draws=self.drawn_cases(pending))
                except WorkerFailure as failure:
                    results.append(self.judged_failure(*pending.pop(0), failure))
                    self.progress.step(f"import failed: {results[-1].reason}")
                    results += [CaseResult(k, c, Status.NOT_RUN, "not run: the submission did not import")
                                for k, c in pending]
                    return results
                self.timer_method = ready.timer
                self.clock.add("submission_import", ready.import_s)  # the worker's own figure: part of worker_start
                for step, seconds in ready.steps_s.items():  # the same, per step of its Start before the import
                    if type(seconds) in (int, float) and step in messages.WORKER_STEPS + messages.WORKER_AHEAD:
                        self.clock.add(f"worker_{step}", float(seconds))
                entry = session.worker.entry_s(ready.steps_s.get(messages.ENTERED_AT), self.task.timeouts_s["import"])
                if entry is not None:
                    self.clock.add("worker_entry", entry)
                if not announced:
                    self.progress.detail(f"imported in {ready.import_s:.1f} s; timing: {self.timer_method}")
                    sandbox = {**ready.sandbox, "syscalls": session.syscalls_line()}
                    self.progress.detail("sandbox: " + "; ".join(f"{k} {v}" for k, v in sandbox.items()))
                    announced = True
                    if pending[0][0] == "test":  # beside the first test only (warm_first_use)
                        warming = self.warm_first_use(pending[0][1])
                sent_ahead: list[dict[str, Any]] = []  # the next test, sent while this one is checked
                while pending:
                    kind, case = pending.pop(0)
                    label = f"{kind} {case_text(case)}"
                    self.progress.working(label)
                    ahead = self.ahead(session, kind, pending, sent_ahead)
                    try:
                        outcome = (self.run_test(session, case, ahead) if kind == "test"
                                   else self.run_benchmark(session, case))
                    except WorkerFailure as failure:
                        outcome = self.judged_failure(kind, case, failure)
                    self.join_first_use(warming)
                    warming = None
                    results.append(outcome)
                    self.progress.step(f"[{len(results)}/{len(cases)}] {label}: {report.case_summary(outcome)}")
                    stop = self.stop_reason(results)
                    if stop:
                        if pending:
                            self.progress.note(f"{len(pending)} case(s) {stop}")
                        results += [CaseResult(k, c, Status.NOT_RUN, stop) for k, c in pending]
                        pending = []
                    elif not session.alive() and not sent_ahead:
                        break  # the worker died with this case; a fresh one takes the rest
                    sent_ahead.clear()  # a test sent ahead is collected by its own run_test, on this worker
        return results


def core_draws(mode: Mode, device: str) -> bool:
    """Whether the worker's core draws the timed calls' inputs (harness.worker.drawn_inputs): on a GPU with
    the core, in every mode that times calls for a figure (ranked or not), so every call's inputs sit at the
    same addresses, fresh contents each call, and a kernel that caches per-address work times the same in
    benchmark mode as ranked (docs/timing.md). Not in sanitize or profile mode, and never on the CPU (no
    graphs: a ranked CPU call is staged instead, input_stage). Tests are untimed (a head start gains
    nothing) and keep the ordinary draw (``drawn_cases``)."""
    return (device == "cuda" and mode.runs_benchmarks and not (mode.sanitized or mode.profiled)
            and seal.sealed_core_built())


def _failure_key(reason: str) -> str:
    """A failure's reason without its numbers: two shapes failing the same way compare equal."""
    return re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "#", reason)


def gpu_index(visible_devices: str | None) -> int:
    """The parent's index of the one GPU a worker is given through CUDA_VISIBLE_DEVICES."""
    return int(visible_devices) if visible_devices and visible_devices.strip().isdigit() else 0
