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
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from harness import __version__, report, seal, seeds, timing
from harness.results import CaseResult, ExitCode, RunResult, Status, worst
from harness.runner import CallOutput, WorkerFailure, WorkerSession
from harness.score import geometric_mean
from harness.sol import UnknownDeviceError, breakdown, work
from harness.submission import SubmissionFileError, read_submission
from harness.task import Task, TaskError, load_task, shape_text
from problems.blockscaled import to_device

MODES = ("all", "test", "benchmark", "leaderboard", "profile")
CPU_MAX_FLOPS = 5e7
"""Contest shapes larger than this are left out on the CPU (named in the report): the CPU
reference and the Triton interpreter would take minutes."""

"""A time under half the speed of light is physically impossible: the timing was forged."""

WARMUP_CALLS = 3
MAX_SLEEP_US = 50_000.0

Progress = Callable[[str], None]


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
    kinds = {
        "test": [("test", c) for c in tests],
        "benchmark": [("benchmark", c) for c in benchmarks],
        "profile": [("benchmark", c) for c in benchmarks],
    }
    kinds["all"] = kinds["test"] + kinds["benchmark"]
    kinds["leaderboard"] = kinds["all"]
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
    ) -> None:
        self.task = task
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
            self.progress(f"harness fault: event overhead {drift[0]:.2f} us at the start, {drift[1]:.2f} us now "
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
    def run(self, cases: list[tuple[str, dict[str, Any]]]) -> list[CaseResult]:
        results: list[CaseResult] = []
        pending = list(cases)
        while pending:
            with WorkerSession(self.task, self.submission, self.device, self.visible_devices) as session:
                try:
                    ready = session.start()
                except WorkerFailure as failure:
                    self.stdout_tail = session.output_tail()
                    self.progress(f"import failed: {failure.reason}")
                    results.append(CaseResult(pending[0][0], pending[0][1], failure.status, failure.reason))
                    results += [CaseResult(k, c, Status.NOT_RUN, "not run: the submission did not import")
                                for k, c in pending[1:]]
                    return results
                self.timer_method = ready["timer"]
                self.progress(f"imported in {ready['import_s']:.1f} s; timing: {self.timer_method}")
                self.progress("sandbox: " + "; ".join(f"{k} {v}" for k, v in dict(ready.get("sandbox") or {}).items()))
                while pending:
                    kind, case = pending.pop(0)
                    position = len(results) + 1
                    label = f"[{position}/{len(cases)}] {kind} {shape_text(case)}"
                    try:
                        outcome = self.run_test(session, case) if kind == "test" else self.run_benchmark(session, case)
                    except WorkerFailure as failure:
                        outcome = CaseResult(kind, case, failure.status, failure.reason)
                    results.append(outcome)
                    self.progress(f"{label}: {report.case_summary(outcome)}")
                    if session.process is None or session.process.poll() is not None:
                        break  # the worker died with this case; a fresh one takes the rest
                self.stdout_tail = session.output_tail()
        return results


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
    progress: Progress | None = None,
    timeout_scale: float = 1.0,
) -> RunResult:
    """Evaluate one file; never raises for a bad submission (the result says what went wrong).

    ``timeout_scale`` multiplies every stage limit of task.yml (organizers with slow JIT
    toolchains raise it; tests lower it).
    """
    progress = progress or (lambda line: None)
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
    except (SubmissionFileError, TaskError) as error:
        result.status, result.reason = Status.BAD_INPUT, str(error)
        return result
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
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
        progress(f"note: {note}")
    evaluation = Evaluation(task, file.path, mode, device, secret_seed, visible_devices, progress)
    try:
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


def _handle(args: argparse.Namespace) -> int:
    problem, submission = args.problem, args.submission
    if submission is None:  # a single argument is the file; its POPCORN line names the problem
        problem, submission = None, problem
    try:
        secret = seeds.read_secret(args.secret_seed_file) if args.mode == "leaderboard" else None
    except (OSError, ValueError) as error:
        print(f"error: secret seed: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    result = evaluate_submission(problem, Path(submission), args.mode, args.device, secret, progress=progress,
                                 timeout_scale=args.timeout_scale)
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
    parser.set_defaults(handler=_handle)
