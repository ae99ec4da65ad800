"""One run of one file: the cases its mode asks for on this device, the evaluation, the record.

``evaluate_submission`` is what every caller uses (``harness eval``, the leaderboard, the cluster,
the service): it never raises for a bad submission, and turns the cases' outcomes into one
``RunResult`` with its status, geomeans and whether it can be ranked. ``harness.judge.verdict.evaluation``
drives the worker; docs/architecture.md has the flow.
"""

from __future__ import annotations

import datetime
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness import __version__
from harness.contract.results import CaseResult, RunResult, Status, worst
from harness.contract.submission_file import SubmissionFileError, agreed_problem, leaderboard_problem, read_submission
from harness.contract.task_spec import Task, TaskError, list_problems, load_task, shape_text
from harness.contract.work_formula import work
from harness.display.progress import Progress, as_progress
from harness.judge.passes import nsight, sanitize, vendor_cache
from harness.judge.verdict.device_probe import describe_device
from harness.judge.verdict.evaluation import CPU_TEST_CALLS, Evaluation, gpu_index
from harness.judge.verdict.modes import DEFAULT_MODE, Mode
from harness.judge.verdict.run_options import DEFAULT_OPTIONS, RunOptions
from harness.judge.verdict.score import geometric_mean
from harness.judge.worker_link import host_share, seal, supervision, worker_spawn
from harness.sol import fidelity
from harness.sol.calibration import load_calibration

CPU_MAX_FLOPS = 5e7
"""Contest shapes larger than this are left out on the CPU (named in the report): the CPU
reference and the Triton interpreter would take minutes."""

def case_flops(task: Task, case: dict[str, Any]) -> float:
    """Work of a case by the task's own speed-of-light formula (for choosing CPU shapes)."""
    return work(task, case)[1]


def select_cases(task: Task, mode: Mode, device: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """(kind, case) pairs to run, and notes on what was left out and why."""
    tests, benchmarks = list(task.tests), list(task.benchmarks)
    notes: list[str] = []
    if device == "cpu":
        small = [c for c in tests if case_flops(task, c) <= CPU_MAX_FLOPS]
        # A CPU shape that a contest test already covers runs once, with the contest's seed.
        covered = {shape_text(c) for c in small}
        own = [c for c in task.cpu_tests if shape_text(c) not in covered]
        if len(small) < len(tests):
            notes.append(
                f"{len(tests) - len(small)} of {len(tests)} contest test shapes are too large for the CPU "
                f"(run on a GPU to check them); the CPU checks the {len(small)} that fit{'s' * (len(small) == 1)}"
                + (f" and {len(own)} smaller shape{'s' * (len(own) != 1)} of its own" if own else "")
            )
        tests = own + small
        benchmarks = tests  # on the CPU, 'benchmark' times the test shapes: wall clock, not rankable
        if mode.kinds(device) != mode.kinds("cuda"):
            notes.append("timing needs a GPU: this CPU run checks correctness only "
                         "(--mode benchmark times the test shapes by wall clock, not rankable)")
    by_kind = {"test": tests, "benchmark": benchmarks}
    return [(kind, case) for kind in mode.kinds(device) for case in by_kind[kind]], notes


def scope_of(task: Task, cases: list[tuple[str, dict[str, Any]]], device: str) -> dict[str, int]:
    """How much of the contest these cases cover (the report's headline says it on the CPU)."""
    contest_tests = {shape_text(c) for c in task.tests}
    contest_benchmarks = {shape_text(c) for c in task.benchmarks}
    shapes = {shape_text(c) for _, c in cases}  # on the CPU a benchmark run checks the test shapes too
    run = len(shapes & contest_tests)
    return {"contest_tests": len(task.tests), "contest_tests_run": run,
            "own_tests_run": len(shapes - contest_tests - contest_benchmarks),
            "calls_per_test": CPU_TEST_CALLS if device == "cpu" else 1, "contest_benchmarks": len(task.benchmarks),
            "benchmarks_timed": sum(kind == "benchmark" and shape_text(c) in contest_benchmarks
                                    for kind, c in cases)}


def evaluate_submission(
    problem: str | None,
    submission: Path,
    mode: Mode = DEFAULT_MODE,
    device: str | None = None,
    options: RunOptions = DEFAULT_OPTIONS,
    progress: Progress | Callable[[str], None] | None = None,
) -> RunResult:
    """Evaluate one file; never raises for a bad submission (the result says what went wrong).

    ``problem`` None: the file's #!POPCORN line names it. ``mode``: a name becomes a ``Mode`` where it
    enters (the command line, a job), never here. ``device`` None: cuda when a GPU is visible.
    ``options``: the rest (harness.judge.verdict.run_options).
    """
    progress = as_progress(progress)
    started = time.perf_counter()
    result = RunResult(
        problem=problem or "?",
        submission_path=str(submission),
        submission_sha256="",
        mode=mode.name,
        device={"type": device or "?"},
        harness_version=__version__,
        started_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    try:
        file = read_submission(submission)
        result.submission_sha256, result.author = file.sha256, file.author
        problems = list_problems()
        problem = problem or leaderboard_problem(file.leaderboard, problems)
        if not problem:
            raise SubmissionFileError(
                f"{submission}: no problem given; pass it (python -m harness eval PROBLEM FILE) "
                "or add a '#!POPCORN leaderboard <problem>' line"
            )
        task = load_task(problem).with_timeouts_scaled(options.timeout_scale)
        result.problem = task.directory.name
        # a folder's name is its problem
        agreed_problem(task.directory.name, file.leaderboard, submission.name, problems)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if mode.sanitized:
            sanitizer = _sanitizer_for(device, options.sanitizer_tool)
            task = task.with_timeouts_scaled(sanitize.TIMEOUT_SCALE)
    except (SubmissionFileError, TaskError) as error:
        result.status, result.reason = Status.BAD_INPUT, str(error)
        return result
    except sanitize.SanitizerMissing as error:
        result.status, result.reason = Status.UNSUPPORTED, str(error)
        return result
    if device == "cuda" and mode.ranked and not seal.sealed_core_built():
        result.status, result.reason = Status.BAD_INPUT, f"ranked mode refused: {seal.SEALED_MISSING}"
        return result
    refusal = device == "cuda" and mode.ranked and (supervision.ranked_refusal() or worker_spawn.kept_root(submission))
    if refusal:
        result.status, result.reason = Status.BAD_INPUT, f"ranked mode refused: {refusal}"
        return result
    unreadable = worker_spawn.unreadable_problem(task.task_py, file.path)
    if unreadable:
        result.status, result.reason = Status.BAD_INPUT, unreadable
        return result
    if device == "cuda" and not torch.cuda.is_available():
        result.status = Status.CUDA_ERROR
        result.reason = "no CUDA GPU is visible: run with --device cpu for a correctness check, or on a GPU machine"
        return result
    result.device = describe_device(device, gpu_index(options.visible_devices))
    cases, notes = select_cases(task, mode, device)
    result.scope = scope_of(task, cases, device)
    for note in notes:
        progress.note(f"note: {note}")
    host_share.size_torch_threads()  # the parent's reference and check: its share of the host, not all of it
    evaluation = Evaluation(task, file.path, mode, device, options, progress, result.device)
    evaluation.clock.add("setup", time.perf_counter() - started)
    try:
        if mode.sanitized:
            result.cases, log = sanitize.run(evaluation, cases, sanitizer, sanitize.tools_for(options.sanitizer_tool))
            result.sanitizer_report = str(_write_sanitizer_report(log, options.sanitizer_report))
        else:
            result.cases = evaluation.run(cases)
            if mode.profiled:
                notes += _nsight_pass(evaluation, result, device, options.ncu_report_dir)
    finally:
        evaluation.close()
    if evaluation.quiet_refusals:
        notes.append(supervision.refusal_note(evaluation.quiet_refusals))
    result.stdout_tail = evaluation.stdout_tail
    result.status = worst([c.status for c in result.cases]) if result.cases else Status.NOT_RUN
    failed = [c for c in result.cases if c.status not in (Status.PASSED, Status.NOT_RUN)]
    result.reason = failed[0].reason if failed else "; ".join(notes)
    timed = [c for c in result.cases if c.kind == "benchmark"]
    if timed and all(c.status == Status.PASSED for c in timed):
        result.geomean_us = geometric_mean([c.timing.median_us for c in timed if c.timing])
        result.geomean_pct_of_sol = geometric_mean([c.pct_of_sol for c in timed if c.pct_of_sol])
        measure = options.vendor_first_use if file.path.resolve() != _vendor_path(task) else None
        device_name = str(result.device.get("name", device))
        with evaluation.clock.phase("vendor"):
            _beside_the_vendor(task, timed, device_name, (progress, measure) if measure else None)
        vendor = [c.pct_of_vendor for c in timed if c.pct_of_vendor]
        result.geomean_pct_of_vendor = geometric_mean(vendor) if len(vendor) == len(timed) else None
    if device == "cuda" and timed:
        result.error_bound_note = _with_error_bounds(timed, str(result.device.get("name", device)))
    # Ranked only with secret seeds: public per-call seeds can be predicted and answers precomputed.
    result.rankable = (
        device == "cuda"
        and mode.ranked
        and options.secret_seed is not None
        and result.status == Status.PASSED
        and len(timed) == len(task.benchmarks)
    )
    result.elapsed_s = time.perf_counter() - started
    result.wall_s = evaluation.clock.rounded(result.elapsed_s)
    return result


FirstUse = tuple[Progress, Callable[[Task, str], object]]
"""The progress display that says so, and the function that measures a vendor time on first use."""


def _vendor_path(task: Task) -> Path | None:
    return task.vendor.file.resolve() if task.vendor else None


def _beside_the_vendor(task: Task, timed: list[CaseResult], device_name: str, first_use: FirstUse | None) -> None:
    """Each timed case's vendor time and % of it, or the reason there is none (harness.judge.passes.vendor_cache).
    With ``first_use`` (a progress display and the measuring function): a GPU with no cached vendor
    time gets it measured now, once, with one line saying so (the CPU keeps its one-line reason)."""
    cases = [c.case for c in timed]
    times = vendor_cache.lookup_cases(task, cases, device_name)
    if first_use is not None and task.vendor and any(v.note == vendor_cache.MEASURE_HINT for v in times):
        progress, measure = first_use
        progress.note(f"vendor: no {task.vendor.library} time for {device_name} yet: measuring it once now "
                      f"(cached in {vendor_cache.cache_path()}; `calibrate --vendor` measures it again)")
        measure(task, device_name)
        times = vendor_cache.lookup_cases(task, cases, device_name)
    for case, vendor in zip(timed, times):
        case.vendor_note = vendor.note
        if vendor.median_us and case.timing and case.timing.median_us > 0:
            case.vendor_us = vendor.median_us
            case.pct_of_vendor = 100.0 * vendor.median_us / case.timing.median_us


def _with_error_bounds(timed: list[CaseResult], device_name: str) -> str:
    """Each timed median's residual error bound on this GPU (calibrate's fidelity record, harness.sol.fidelity);
    returns where the bound comes from, or why there is none."""
    bound, source = fidelity.bound_of(load_calibration(device_name))
    for case in timed:
        if bound and case.timing:
            case.error_bound_us = bound.bound_us(case.timing.median_us)
    return source


def _nsight_pass(evaluation: Evaluation, result: RunResult, device: str, folder: Path | None) -> list[str]:
    """Profile mode: each passed benchmark shape once under Nsight Compute where it can run, else
    one note saying why not (torch.profiler's table stays either way); notes on what failed."""
    ncu = nsight.find_ncu()
    why_not = nsight.unavailable(device, ncu)
    if why_not or ncu is None:
        return [why_not] if why_not else []
    if not any(c.kind == "benchmark" and c.status == Status.PASSED for c in result.cases):
        return []
    tail = evaluation.stdout_tail  # the submission's output, not ncu's
    folder = folder or Path(tempfile.mkdtemp(prefix="nvfp4-ncu-"))
    try:
        return nsight.profile_cases(evaluation, result.cases, ncu, folder)
    finally:
        evaluation.stdout_tail = tail
        result.ncu_reports = str(folder)


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
