"""``python -m harness eval``: check a submission on every test shape, then time it.

The evaluator is the trusted process. It never imports the submission: a worker
(``harness.runner``) runs it; this module decides which calls to make, computes every expected
output itself from the same seeds, checks every output (timed ones included) and applies the
stopping rule. See docs/architecture.md for the flow and docs/timing.md for the method.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from harness import __version__, hardware, report, sanitize, seal, seeds, timing
from harness.progress import Progress, as_progress, for_stream
from harness.results import CaseResult, ExitCode, RunResult, Status, worst
from harness.runner import CallOutput, WorkerFailure, WorkerSession
from harness.score import geometric_mean
from harness.sol import UnknownDeviceError, breakdown, work
from harness.submission import SubmissionFileError, read_submission
from harness.task import Task, TaskError, load_task, shape_text
from problems.blockscaled import to_device

MODES = ("all", "test", "benchmark", "leaderboard", "profile", "sanitize")
CPU_MAX_FLOPS = 5e7
"""Contest shapes larger than this are left out on the CPU (named in the report): the CPU
reference and the Triton interpreter would take minutes."""

"""A time under half the speed of light is physically impossible: the timing was forged."""

WARMUP_CALLS = 3
MAX_SLEEP_US = 50_000.0

SAME_FAILURE_LIMIT = 2
"""Fail fast: when this many first cases fail for the same reason, the rest are not run."""


def case_flops(task: Task, case: dict[str, Any]) -> float:
    """Work of a case by the task's own speed-of-light formula (for choosing CPU shapes)."""
    return work(task, case)[1]


def select_cases(task: Task, mode: str, device: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """(kind, case) pairs to run, and notes on what was left out and why."""
    tests, benchmarks = list(task.tests), list(task.benchmarks)
    notes: list[str] = []
    if device == "cpu":
        small = [c for c in tests if case_flops(task, c) <= CPU_MAX_FLOPS]
        if len(small) < len(tests):
            notes.append(
                f"{len(tests) - len(small)} of {len(tests)} contest test shapes are too large for the CPU "
                "(run on a GPU to check them)"
            )
        tests = list(task.cpu_tests) + small
        benchmarks = tests  # on the CPU, 'benchmark' times the test shapes: wall clock, not rankable
        if mode in ("all", "leaderboard"):
            notes.append("timing needs a GPU: this CPU run checks correctness only "
                         "(--mode benchmark times the test shapes by wall clock, not rankable)")
            return [("test", c) for c in tests], notes
    kinds = {
        "test": [("test", c) for c in tests],
        "benchmark": [("benchmark", c) for c in benchmarks],
        "profile": [("benchmark", c) for c in benchmarks],
    }
    kinds["all"] = kinds["test"] + kinds["benchmark"]
    kinds["leaderboard"] = kinds["all"]
    kinds["sanitize"] = kinds["test"]  # one call per test shape, under compute-sanitizer
    return kinds[mode], notes


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
        self.sanitizer_log = ""  # sanitize mode: every raw compute-sanitizer report of the run

    def close(self) -> None:
        """Stop the thread that draws the parent's copies of the inputs."""
        self._generator.shutdown(cancel_futures=True)

    # -- checking -----------------------------------------------------------------------
    def check(self, inputs: Future, result: CallOutput) -> tuple[bool, str]:
        """Judge one output against the reference on the same inputs (generated on the CPU meanwhile)."""
        if isinstance(result.output, str):
            return False, result.output
        if result.unfinished:
            return False, (
                "the output changed after custom_kernel returned: work left running on another stream "
                "(make the caller's stream wait for it)"
            )
        return self.reference.check_implementation(to_device(inputs.result(), self.check_device), result.output)

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
                      stage: str, timeout_s: float) -> CallOutput:
        seeded = {**case, "seed": self._seed(case, index)}
        # The parent's copy of the inputs is drawn on the CPU while the worker runs the call: it
        # touches no GPU, so it cannot disturb the timing, and it halves the wall time per call.
        inputs = self._generator.submit(self.reference.generate_input, **seeded, device="cpu")
        result = session.call(seeded, sleep_us, stage, timeout_s)
        ok, message = self.check(inputs, result)
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
        first = self._checked_call(session, case, 0, 0.0, "the first call (warm-up, JIT)", limit["warmup"])
        warmup_s = time.perf_counter() - started
        host_us = [first.host_us]
        for index in range(1, WARMUP_CALLS):
            warm = self._checked_call(session, case, index, timing.MIN_QUEUED_SLEEP_US, "warm-up", limit["warmup"])
            host_us.append(warm.host_us)
        # The queued sleep must outlast the host's launch of the call (the warm-up's slowest but the first).
        sleep_us = min(MAX_SLEEP_US, max(timing.MIN_QUEUED_SLEEP_US, 2 * max(host_us[1:]) + timing.MIN_QUEUED_SLEEP_US))
        samples, index = self._timed_loop(session, case, WARMUP_CALLS, sleep_us, started)
        drift = session.recheck_overhead(limit["warmup"])
        if drift and seal.overhead_moved(*drift)[0]:
            self.progress.note(f"harness fault: event overhead {drift[0]:.2f} us at the start, {drift[1]:.2f} us now "
                               f"(spread {drift[2]:.2f} us); measuring this case again")
            samples, index = self._timed_loop(session, case, index, sleep_us, time.perf_counter())
            drift = session.recheck_overhead(limit["warmup"])
            if drift and seal.overhead_moved(*drift)[0]:
                return CaseResult("benchmark", case, Status.HARNESS_FAULT,
                                  f"the harness's event overhead moved twice ({drift[0]:.2f} -> {drift[1]:.2f} us): "
                                  "its timing of this GPU is not trustworthy now; nothing is blamed on the submission")
        stats = timing.summarize(samples, self.timer_method)
        profile = session.profile({**case, "seed": self._seed(case, index)}, limit["warmup"]) if (
            self.mode == "profile") else None
        outcome = CaseResult("benchmark", case, Status.PASSED, f"{stats.runs} timed calls, every output checked",
                             timing=stats, warmup_s=warmup_s, profile=profile)
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

    def _timed_loop(self, session: WorkerSession, case: dict[str, Any], index: int, sleep_us: float,
                    started: float) -> tuple[list[float], int]:
        """Timed calls until the stopping rule says enough: (times in us, the next call index)."""
        samples: list[float] = []
        loop_start = time.perf_counter()
        while not self.rule.done(samples, time.perf_counter() - loop_start):
            if time.perf_counter() - started > self.task.timeouts_s["benchmark"]:
                break
            result = self._checked_call(session, case, index, sleep_us, "a timed call",
                                        self.task.timeouts_s["benchmark"])
            samples.append(result.time_us)
            index += 1
        return samples, index

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

    def run_sanitized(self, cases: list[tuple[str, dict[str, Any]]], executable: Path,
                      tools: tuple[str, ...]) -> list[CaseResult]:
        results, logs = [], []
        for outcome, log in sanitize.run_cases(self, cases, executable, tools):
            results.append(outcome)
            logs.append(log)
            self.progress.step(f"[{len(results)}/{len(cases)}] sanitize {shape_text(outcome.case)}: "
                               f"{report.case_summary(outcome)}")
        self.sanitizer_log = "\n".join(logs)
        return results

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
    return re.sub(r"\d+(\.\d+)?", "#", reason)


def gpu_index(visible_devices: str | None) -> int:
    """The parent's index of the one GPU a worker is given through CUDA_VISIBLE_DEVICES."""
    return int(visible_devices) if visible_devices and visible_devices.strip().isdigit() else 0


def _device_info(device: str, index: int) -> dict[str, Any]:
    info: dict[str, Any] = {"type": device, "name": torch.cuda.get_device_name(index) if device == "cuda" else "cpu",
                            "torch": torch.__version__}
    if device == "cuda":
        props = torch.cuda.get_device_properties(index)
        info.update(capability=f"{props.major}.{props.minor}", sm_count=props.multi_processor_count,
                    l2_bytes=props.L2_cache_size, memory_bytes=props.total_memory)
        info.update(report.read_clocks(index))
    return info


def evaluate_submission(
    problem: str | None,
    submission: Path,
    mode: str = "all",
    device: str | None = None,
    secret_seed: int | None = None,
    visible_devices: str | None = None,
    progress: Progress | Callable[[str], None] | None = None,
    timeout_scale: float = 1.0,
    keep_going: bool = False,
    sanitizer_tool: str = "memcheck",
    sanitizer_report: Path | None = None,
) -> RunResult:
    """Evaluate one file; never raises for a bad submission (the result says what went wrong).

    ``timeout_scale`` multiplies every stage limit of task.yml (organizers with slow JIT
    toolchains raise it; tests lower it). ``keep_going`` runs every case even after the first
    ones failed the same way. Sanitize mode runs ``sanitizer_tool`` (or ``all``) and writes every
    raw report to ``sanitizer_report`` (default: a new file in the temp folder).
    """
    progress = as_progress(progress)
    started = time.perf_counter()
    result = RunResult(
        problem=problem or "?",
        submission_path=str(submission),
        submission_sha256="",
        mode=mode,
        device={"type": device or "?"},
        harness_version=__version__,
        started_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    try:
        file = read_submission(submission)
        result.submission_sha256, result.author = file.sha256, file.author
        problem = problem or file.leaderboard
        if not problem:
            raise SubmissionFileError(
                f"{submission}: no problem given; pass it (python -m harness eval PROBLEM FILE) "
                "or add a '#!POPCORN leaderboard <problem>' line"
            )
        task = load_task(problem).with_timeouts_scaled(timeout_scale)
        result.problem = task.directory.name
        if mode not in MODES:
            raise SubmissionFileError(f"unknown mode '{mode}': choose one of {', '.join(MODES)}")
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if mode == "sanitize":
            sanitizer = _sanitizer_for(device, sanitizer_tool)
            task = task.with_timeouts_scaled(sanitize.TIMEOUT_SCALE)
    except (SubmissionFileError, TaskError) as error:
        result.status, result.reason = Status.BAD_INPUT, str(error)
        return result
    except sanitize.SanitizerMissing as error:
        result.status, result.reason = Status.UNSUPPORTED, str(error)
        return result
    if device == "cuda" and mode == "leaderboard" and not timing.sealed_available():
        result.status, result.reason = Status.BAD_INPUT, f"ranked mode refused: {timing.SEALED_MISSING}"
        return result
    if device == "cuda" and not torch.cuda.is_available():
        result.status = Status.CUDA_ERROR
        result.reason = "no CUDA GPU is visible: run with --device cpu for a correctness check, or on a GPU machine"
        return result
    result.device = _device_info(device, gpu_index(visible_devices))
    cases, notes = select_cases(task, mode, device)
    for note in notes:
        progress.note(f"note: {note}")
    evaluation = Evaluation(task, file.path, mode, device, secret_seed, visible_devices, progress, result.device,
                            keep_going)
    try:
        if mode == "sanitize":
            result.cases = evaluation.run_sanitized(cases, sanitizer, sanitize.tools_for(sanitizer_tool))
            result.sanitizer_report = str(_write_sanitizer_report(evaluation.sanitizer_log, sanitizer_report))
        else:
            result.cases = evaluation.run(cases)
    finally:
        evaluation.close()
    result.stdout_tail = evaluation.stdout_tail
    result.status = worst([c.status for c in result.cases]) if result.cases else Status.NOT_RUN
    failed = [c for c in result.cases if c.status not in (Status.PASSED, Status.NOT_RUN)]
    result.reason = failed[0].reason if failed else "; ".join(notes)
    timed = [c for c in result.cases if c.kind == "benchmark"]
    if timed and all(c.status == Status.PASSED for c in timed):
        result.geomean_us = geometric_mean([c.timing.median_us for c in timed if c.timing])
        result.geomean_pct_of_sol = geometric_mean([c.pct_of_sol for c in timed if c.pct_of_sol])
    # Ranked only with secret seeds: public per-call seeds can be predicted and answers precomputed.
    result.rankable = (
        device == "cuda"
        and mode == "leaderboard"
        and secret_seed is not None
        and result.status == Status.PASSED
        and len(timed) == len(task.benchmarks)
    )
    result.elapsed_s = time.perf_counter() - started
    return result


def _sanitizer_for(device: str, tool: str) -> Path:
    """compute-sanitizer's path, or one line on why sanitize mode cannot run here."""
    if tool not in sanitize.TOOL_CHOICES:
        raise SubmissionFileError(f"unknown tool '{tool}': choose one of {', '.join(sanitize.TOOL_CHOICES)}")
    if device != "cuda":
        raise sanitize.SanitizerMissing("needs a CUDA GPU: sanitize mode runs compute-sanitizer on CUDA kernels; "
                                        "this machine: CPU only (no CUDA GPU); instead: --mode test checks "
                                        "correctness here, run sanitize mode on a GPU machine")
    return sanitize.find_sanitizer()


def _write_sanitizer_report(text: str, path: Path | None) -> Path:
    if path is None:
        handle, name = tempfile.mkstemp(prefix="nvfp4-sanitizer-", suffix=".txt")
        os.close(handle)
        path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _handle(args: argparse.Namespace) -> int:
    problem, submission = args.problem, args.submission
    if submission is None:  # a single argument is the file; its POPCORN line names the problem
        problem, submission = None, problem
    try:
        secret = seeds.read_secret(args.secret_seed_file) if args.mode == "leaderboard" else None
    except (OSError, ValueError) as error:
        print(f"error: secret seed: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)

    progress = for_stream(sys.stderr)
    report_path = Path(args.json).with_suffix(".sanitizer.txt") if args.json else None
    try:
        result = evaluate_submission(problem, Path(submission), args.mode, args.device, secret, progress=progress,
                                     timeout_scale=args.timeout_scale, keep_going=args.keep_going,
                                     sanitizer_tool=args.tool, sanitizer_report=report_path)
    finally:
        progress.close()
    print(report.render(result))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result.to_json(), indent=2))
    return int(result.exit_code)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("eval", help="check and time a submission")
    parser.add_argument("problem", help="problem name (or the submission file, if it has a #!POPCORN line)")
    parser.add_argument("submission", nargs="?", help="path of the submission .py file")
    parser.add_argument("--mode", choices=MODES, default="all", help="all = test then benchmark (default)")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when a GPU is visible")
    parser.add_argument("--json", help="write the full result as JSON to this file")
    parser.add_argument("--secret-seed-file", help="ranked mode: file holding the organizer's secret seed "
                        f"(default: ${seeds.SECRET_ENV})")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiply task.yml's stage time limits")
    parser.add_argument("--keep-going", action="store_true",
                        help="run every case even when the first ones fail the same way")
    parser.add_argument("--tool", choices=sanitize.TOOL_CHOICES, default="memcheck",
                        help="sanitize mode: the compute-sanitizer tool (all = each in turn)")
    parser.set_defaults(handler=_handle)
