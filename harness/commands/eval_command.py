"""``python -m harness eval``: check a submission on every test shape, then time it.

The command's part only: arguments, the --json target checked before the run, the report printed
and the exit code. The run itself is ``harness.judge.run.evaluate_submission``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from harness.commands.calibrate_command import measure_vendor
from harness.contract.results import ExitCode
from harness.contract.task_spec import list_problems
from harness.display import report
from harness.display.progress import for_stream
from harness.history import run_history
from harness.judge.passes import sanitize
from harness.judge.run import evaluate_submission
from harness.judge.verdict import seeds
from harness.judge.verdict.modes import DEFAULT_MODE, MODES, mode_named
from harness.judge.verdict.run_options import RunOptions
from harness.judge.verdict.wall_clock import process_age_s


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
        mode = mode_named(args.mode)
        secret = seeds.read_secret(args.secret_seed_file) if mode.ranked else None
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)

    if mode.ranked and secret is None:
        print(f"note: no secret seed (${seeds.SECRET_ENV} or --secret-seed-file): public seeds, so the run is not "
              "rankable", file=sys.stderr)
    progress = for_stream(sys.stderr, verbose=args.verbose)
    options = RunOptions(secret_seed=secret, timeout_scale=args.timeout_scale, keep_going=args.keep_going,
                         sanitizer_tool=args.tool,
                         sanitizer_report=json_path.with_suffix(".sanitizer.txt") if json_path else None,
                         ncu_report_dir=json_path.with_suffix(".ncu") if json_path else None,
                         vendor_first_use=measure_vendor, cache_owner=f"file:{Path(submission).resolve()}")
    start_s = process_age_s()  # the interpreter's start and imports, before the evaluation's own clock
    try:
        result = evaluate_submission(problem, Path(submission), mode, args.device, options, progress)
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C): the run stopped, its workers were killed, nothing was written", file=sys.stderr)
        return 130
    finally:
        progress.close()
    if start_s is not None:
        result.wall_s = {"start": round(start_s, 3), **result.wall_s}
    print(report.render(result, verbose=args.verbose))
    if json_path:
        json_path.write_text(json.dumps(result.to_json(), indent=2))
    if not args.no_history:
        print(run_history.record(result), file=sys.stderr)
    return int(result.exit_code)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("eval", help="check and time a submission")
    parser.add_argument("problem", help="problem name (or the submission file, if it has a #!POPCORN line)")
    parser.add_argument("submission", nargs="?", help="path of the submission .py file")
    parser.add_argument("--mode", choices=list(MODES), default=DEFAULT_MODE.name,
                        help="; ".join(f"{m.name}: {m.help}" for m in MODES.values()))
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when a GPU is visible")
    parser.add_argument("--json", help="write the full result as JSON to this file")
    parser.add_argument("--secret-seed-file", help="ranked mode: file holding the organizer's secret seed "
                        f"(default: ${seeds.SECRET_ENV})")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiply task.yml's stage time limits")
    parser.add_argument("--keep-going", action="store_true",
                        help="run every case even when the first ones fail the same way")
    parser.add_argument("--verbose", action="store_true",
                        help="also print the sandbox, the import time, where the wall time went (per timed "
                        "call too) and the worker's full traceback of a failed case (its stacks at a timeout)")
    parser.add_argument("--no-history", action="store_true",
                        help=f"do not keep this run in your history (python -m harness history; "
                        f"${run_history.HISTORY_ENV} says where it is)")
    parser.add_argument("--tool", choices=sanitize.TOOL_CHOICES, default="memcheck",
                        help="sanitize mode: the compute-sanitizer tool (all = each in turn)")
    parser.set_defaults(handler=_handle)
