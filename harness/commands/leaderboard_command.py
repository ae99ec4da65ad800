"""``python -m harness leaderboard``: evaluate every submission in ranked mode, store, rank, render.

Exit codes: 0 when the run completed (failed submissions are listed on the pages, not fatal),
113 for a bad argument or an unusable --cluster (one line, no traceback), 110 when --device cuda
finds no GPU.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from harness import __version__
from harness.contract.results import ExitCode, Status
from harness.display.progress import Progress, for_stream
from harness.execution.serial_executor import Executor
from harness.judge.verdict import seeds
from harness.leaderboard import render, runner
from harness.leaderboard.rank import build_board
from harness.leaderboard.store import Store
from harness.review import review_store
from harness.sqlite_migrations import StoreError

DEFAULT_DB = Path("results/leaderboard.db")
DEFAULT_OUT = Path("results/leaderboard")
DEFAULT_SUBMISSIONS = Path("submissions")


class UsageError(Exception):
    """A bad argument; the message is the one line the organizer sees."""


class NoGpuError(Exception):
    """--device cuda on a machine where torch sees no GPU."""


@dataclass(frozen=True)
class Settings:
    problems: list[str]
    submissions: Path
    secret_seed: int | None
    out: Path


@dataclass(frozen=True)
class Execution:
    """Where the evaluations run (None: serially in this process) and on which device model."""

    device: str
    device_name: str
    executor: Executor | None


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cuda_device_name() -> str:
    """The name the evaluator records for GPU 0 (the speed-of-light table's name when it has one)."""
    try:
        from harness.sol.breakdown import current_device_name
    except ImportError:
        import torch

        return torch.cuda.get_device_name(0)
    return current_device_name()


def pick_device(requested: str | None) -> str:
    import torch

    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise NoGpuError("--device cuda, but no CUDA GPU is visible (use --device cpu for a dry run)")
    return requested or ("cuda" if available else "cpu")


def resolve(args: argparse.Namespace) -> Settings:
    """Check every argument before anything runs; raise UsageError with one clear line."""
    from harness.contract.task_spec import contest_problems, list_problems

    known = contest_problems()
    if args.problem and args.problem not in known:
        raise UsageError(f"unknown problem '{args.problem}': choose one of {', '.join(known)}")
    root = Path(args.submissions)
    if not root.is_dir():
        raise UsageError(f"no submissions folder at '{root}': run from the repository root or pass --submissions DIR")
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        if folder.name not in list_problems() and not args.problem:  # calibration problems: never ranked
            say(f"note: skipping {folder}/: '{folder.name}' is not a problem ({', '.join(known)})")
    try:
        secret = seeds.read_secret(args.secret_seed_file)
    except (OSError, ValueError) as error:
        raise UsageError(f"secret seed: {error}") from None
    if secret is None:
        say(f"note: no secret seed (${seeds.SECRET_ENV} or --secret-seed-file): "
            "runs use public seeds and are listed as not rankable")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out {out}: cannot create it ({error.strerror})") from None
    return Settings([args.problem] if args.problem else known, root, secret, out)


def open_execution(args: argparse.Namespace, display: Progress) -> Execution:
    """Serial in this process, or a Dask cluster; a cluster also says which device its workers have
    (a joined one may have GPUs where this machine has none)."""
    if args.cluster is None:
        device = pick_device(args.device)
        return Execution(device, cuda_device_name() if device == "cuda" else "cpu", None)
    from harness.execution.dask_executor import ClusterError, open_dask_executor

    device = pick_device(args.device) if args.cluster == "local" else args.device
    try:
        executor = open_dask_executor(args.cluster, device=device, progress=lambda line: display.note(f"      {line}"))
    except ClusterError as error:
        raise UsageError(str(error)) from None
    return Execution(executor.device, executor.device_name, executor)


def refused(error: UsageError | StoreError | NoGpuError) -> int:
    """One line for a run that cannot start, and its exit code."""
    say(f"leaderboard: error: {'--db: ' if isinstance(error, StoreError) else ''}{error}")
    return int(ExitCode.CUDA_FAILURE if isinstance(error, NoGpuError) else ExitCode.BAD_INPUT)


def handle(args: argparse.Namespace) -> int:
    try:
        settings = resolve(args)
        store = Store.open(args.db)
    except (UsageError, StoreError) as error:
        return refused(error)
    display = for_stream(sys.stderr)
    with store:
        try:
            execution = open_execution(args, display)
        except (UsageError, NoGpuError) as error:
            return refused(error)
        try:
            submissions = runner.discover(settings.submissions, settings.problems)
            say(f"leaderboard: {len(submissions)} file(s) under {settings.submissions}/ for "
                f"{', '.join(settings.problems)}; device {execution.device_name} ({execution.device}); "
                f"harness {__version__}; database {args.db}")
            outcomes = runner.run_all(submissions, store, device=execution.device,
                                      device_name=execution.device_name, secret_seed=settings.secret_seed,
                                      force=args.force, executor=execution.executor, progress=display)
        finally:
            display.close()
            if execution.executor is not None:
                execution.executor.close()
        problems = sorted(set(store.problems()) | {s.problem for s in submissions})
        boards = [build_board(p, store.runs(p), execution.device_name, __version__) for p in problems]
        reviewed = review_store.reviewed_problems(store.connection)
    generated_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    render.write_site(boards, settings.out, generated_at, reviewed)
    cached = sum(o.cached for o in outcomes)
    failed = sum(o.result.status not in (Status.PASSED, Status.NOT_RUN) for o in outcomes)
    say(f"leaderboard: {len(outcomes) - cached} evaluated, {cached} cached, {failed} failed (listed on the pages)")
    print(f"wrote {settings.out / 'index.html'} ({len(boards)} problem(s))")
    return int(ExitCode.PASSED)


def _one_line_error(parser: argparse.ArgumentParser) -> None:
    """argparse's own errors (a bad --device, a missing value) as one line and exit code 113."""

    def error(message: str) -> NoReturn:
        print(f"{parser.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(int(ExitCode.BAD_INPUT))

    parser.error = error  # type: ignore[method-assign]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "leaderboard", help="evaluate every submission in ranked mode and render the leaderboard",
        description="Evaluate every *.py under submissions/<problem>/ in ranked mode (files already stored for "
                    "this device and harness version are reused), store each run in SQLite, and write "
                    "LEADERBOARD.md, index.html and leaderboard.json per problem.")
    parser.add_argument("--problem", help="only this problem (default: every problem)")
    parser.add_argument("--db", default=str(DEFAULT_DB), help=f"SQLite database (default: {DEFAULT_DB})")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"folder for the pages (default: {DEFAULT_OUT})")
    parser.add_argument("--force", action="store_true", help="evaluate again files that already have a stored run")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when a GPU is visible")
    parser.add_argument("--secret-seed-file", help="file holding the organizer's secret seed "
                        "(default: $NVFP4_SECRET_SEED)")
    parser.add_argument("--cluster", metavar="local|tcp://HOST:PORT",
                        help="run the evaluations on a Dask cluster: 'local' starts one worker per GPU of this "
                             "host (per core with --device cpu), tcp://HOST:8786 joins a running scheduler "
                             "(default: one after another in this process)")
    parser.add_argument("--submissions", default=str(DEFAULT_SUBMISSIONS),
                        help=f"folder of <problem>/*.py files (default: {DEFAULT_SUBMISSIONS})")
    _one_line_error(parser)
    parser.set_defaults(handler=handle)
