"""``python -m harness eval``: check a submission on every test shape, then time it.

The evaluator is the trusted process. It never imports the submission: a worker
(``harness.runner``) runs it; this module decides which calls to make, computes every expected
output itself from the same seeds, checks every output (timed ones included) and applies the
stopping rule. See docs/architecture.md for the flow and docs/timing.md for the method.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness import __version__, report, sanitize, seeds, timing
from harness.evaluation import Evaluation, gpu_index
from harness.progress import Progress, as_progress, for_stream
from harness.results import ExitCode, RunResult, Status, worst
from harness.score import geometric_mean
from harness.sol import work
from harness.submission import SubmissionFileError, read_submission
from harness.task import Task, TaskError, list_problems, load_task

MODES = ("all", "test", "benchmark", "leaderboard", "profile", "sanitize")
CPU_MAX_FLOPS = 5e7
"""Contest shapes larger than this are left out on the CPU (named in the report): the CPU
reference and the Triton interpreter would take minutes."""

"""A time under half the speed of light is physically impossible: the timing was forged."""

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
            result.cases, log = sanitize.run(evaluation, cases, sanitizer, sanitize.tools_for(sanitizer_tool))
            result.sanitizer_report = str(_write_sanitizer_report(log, sanitizer_report))
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


def _json_target(path: str) -> Path:
    """Where --json goes, checked before the run: a bad path must not cost a finished result."""
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"--json {path}: is a folder; give the path of a file, e.g. {target / 'result.json'}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--json {path}: its folder cannot be made ({error.strerror}); give another path") from None
    if not os.access(target if target.exists() else target.parent, os.W_OK):
        raise ValueError(f"--json {path}: cannot be written here; give another path")
    return target


def _handle(args: argparse.Namespace) -> int:
    problem, submission = args.problem, args.submission
    if submission is None:  # a single argument is the file; its POPCORN line names the problem
        problem, submission = None, problem
    try:
        if args.submission is None and args.problem in list_problems():
            raise ValueError(f"no submission file: python -m harness eval {args.problem} path/to/submission.py")
        if not math.isfinite(args.timeout_scale) or args.timeout_scale <= 0:
            raise ValueError(f"--timeout-scale {args.timeout_scale}: must be a finite number above 0")
        json_path = _json_target(args.json) if args.json else None
        secret = seeds.read_secret(args.secret_seed_file) if args.mode == "leaderboard" else None
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)

    if args.mode == "leaderboard" and secret is None:
        print(f"note: no secret seed (${seeds.SECRET_ENV} or --secret-seed-file): public seeds, so the run is not "
              "rankable", file=sys.stderr)
    progress = for_stream(sys.stderr)
    report_path = json_path.with_suffix(".sanitizer.txt") if json_path else None
    try:
        result = evaluate_submission(problem, Path(submission), args.mode, args.device, secret, progress=progress,
                                     timeout_scale=args.timeout_scale, keep_going=args.keep_going,
                                     sanitizer_tool=args.tool, sanitizer_report=report_path)
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C): the run stopped, its workers were killed, nothing was written", file=sys.stderr)
        return 130
    finally:
        progress.close()
    print(report.render(result))
    if json_path:
        json_path.write_text(json.dumps(result.to_json(), indent=2))
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
