"""``python -m harness leaderboard``: evaluate every submission in ranked mode, store, rank, render.

Exit codes: 0 when the run completed (failed submissions are listed on the pages, not fatal),
113 for a bad argument or an unusable --cluster (one line, no traceback; a cluster lost mid-run
too), 110 when --device cuda finds no GPU, 130 when the organizer stopped it (Ctrl-C). A stopped or
lost run still writes its pages, with the entries it did not run listed as such; the next command
resumes it (harness.leaderboard.ledger).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from harness import __version__
from harness.contract.results import ExitCode, Status
from harness.display.progress import Progress, for_stream
from harness.execution.local_cluster import ClusterError
from harness.execution.serial_executor import Executor
from harness.judge.verdict import seeds
from harness.leaderboard import gpu_agreement, ledger, render, runner
from harness.leaderboard.rank import build_board, with_run_state
from harness.leaderboard.store import Store
from harness.review import review_store
from harness.sqlite_migrations import StoreError

DEFAULT_DB = Path("results/leaderboard.db")
DEFAULT_OUT = Path("results/leaderboard")
DEFAULT_SUBMISSIONS = Path("submissions")
INTERRUPTED_EXIT = 130  # the shell's code for a process stopped by SIGINT, as harness eval returns it


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
    gpu_check: str  # 'auto', 'none' or a file


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
    if args.gpu_check not in ("auto", "none"):
        check = Path(args.gpu_check)
        if not check.is_file() or check.suffix != ".py" or check.resolve().parent.name not in list_problems():
            raise UsageError(f"--gpu-check {check}: expected 'auto', 'none' or a .py file in a folder named after "
                             "its problem (submissions/<problem>/FILE.py)")
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
    return Settings([args.problem] if args.problem else known, root, secret, out, args.gpu_check)


def open_execution(args: argparse.Namespace, display: Progress) -> Execution:
    """Serial in this process, or a Dask cluster; a cluster also says which device its workers have
    (a joined one may have GPUs where this machine has none)."""
    if args.cluster is None:
        device = pick_device(args.device)
        return Execution(device, cuda_device_name() if device == "cuda" else "cpu", None)
    from harness.execution.dask_executor import open_dask_executor

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


@contextlib.contextmanager
def stop_on_sigint() -> Iterator[threading.Event]:
    """The organizer's first Ctrl-C sets the event (the run stops between results, stores what came
    back and writes its pages); a second one raises KeyboardInterrupt as usual."""
    stop = threading.Event()

    def first(signum: int, frame: object) -> None:
        stop.set()
        say("leaderboard: stopping (Ctrl-C): results already back are kept, the rest is listed as not run; "
            "Ctrl-C again to quit now")
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def gpu_check_file(choice: str, submissions: list[runner.Submission], store: Store,
                   execution: Execution) -> runner.Submission | None:
    """The file timed on every GPU: 'auto' picks one on a GPU cluster of several workers; a named
    file is checked on any cluster (on the CPU too: its placement can be tested there)."""
    if choice == "none" or execution.executor is None or (choice == "auto" and not submissions):
        return None
    if choice == "auto":
        if execution.device != "cuda" or len(execution.executor.workers()) < 2:
            return None
        return runner.pick_gpu_check(submissions, runner.expected_durations(store, submissions))
    path = Path(choice).resolve()
    return next(s for s in runner.discover(path.parent.parent, [path.parent.name]) if s.path == path)


def run_boards(args: argparse.Namespace, settings: Settings, store: Store, execution: Execution,
               display: Progress, stop: threading.Event) -> tuple[list[runner.Outcome], int, str | None]:
    """Run the leaderboard; (outcomes, the ledger run, why it stopped early or None)."""
    submissions = runner.discover(settings.submissions, settings.problems)
    scope = runner.scope_of(submissions, execution.device_name, args.force, settings.problems)
    ledger_run, resumed = ledger.begin(store.connection, scope)
    say(f"leaderboard: {len(submissions)} file(s) under {settings.submissions}/ for "
        f"{', '.join(settings.problems)}; device {execution.device_name} ({execution.device}); "
        f"harness {__version__}; database {args.db}"
        + (f"; resuming leaderboard run {ledger_run}, stopped before it finished" if resumed else ""))
    check = gpu_check_file(settings.gpu_check, submissions, store, execution)
    stopped = None
    try:
        outcomes = runner.run_all(submissions, store, device=execution.device, device_name=execution.device_name,
                                  secret_seed=settings.secret_seed, force=args.force, executor=execution.executor,
                                  progress=display, ledger_run=ledger_run, stop=stop, gpu_check=check)
    except ClusterError as error:
        outcomes, stopped = [], f"the cluster was lost ({error})"
    if stop.is_set():
        stopped = "stopped by Ctrl-C"
    return outcomes, ledger_run, stopped


def handle(args: argparse.Namespace) -> int:
    try:
        settings = resolve(args)
        store = Store.open(args.db)
    except (UsageError, StoreError) as error:
        return refused(error)
    display = for_stream(sys.stderr)
    with store, stop_on_sigint() as stop:
        try:
            execution = open_execution(args, display)
        except (UsageError, NoGpuError) as error:
            return refused(error)
        try:
            outcomes, ledger_run, stopped = run_boards(args, settings, store, execution, display, stop)
        finally:
            display.close()
            if execution.executor is not None:
                execution.executor.close()
        planned = {entry.planned.problem for entry in ledger.entries(store.connection, ledger_run)}
        problems = sorted(set(store.problems()) | planned)
        gpus = gpu_agreement.assess(ledger.gpu_samples(store.connection, ledger_run))
        not_run = ledger.not_run(store.connection, ledger_run)
        boards = [with_run_state(build_board(p, store.runs(p), execution.device_name, __version__), not_run, gpus)
                  for p in problems]
        reviewed = review_store.reviewed_problems(store.connection)
    generated_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    render.write_site(boards, settings.out, generated_at, reviewed)
    cached = sum(o.cached for o in outcomes)
    failed = sum(o.result.status not in (Status.PASSED, Status.NOT_RUN) and not o.harness_error for o in outcomes)
    missing = len(not_run) + sum(o.harness_error for o in outcomes)  # harness failures: listed as not run too
    flagged = [g.label for g in gpus if g.flagged]
    if flagged:
        say(f"leaderboard: GPU check: {', '.join(flagged)} read more than {gpu_agreement.AGREEMENT_TOLERANCE_PCT:g}% "
            "off their peers (flagged on the pages)")
    say(f"leaderboard: {len(outcomes) - cached} evaluated, {cached} cached, {failed} failed (listed on the pages)"
        + (f", {missing} not run" if missing else ""))
    print(f"wrote {settings.out / 'index.html'} ({len(boards)} problem(s))")
    if stopped:
        say(f"leaderboard: {stopped}: {missing} file(s) not run (listed on the pages); run the same command "
            "again to run only those")
        return INTERRUPTED_EXIT if stop.is_set() else int(ExitCode.BAD_INPUT)
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
    parser.add_argument("--gpu-check", default="auto", metavar="auto|none|FILE",
                        help="a file timed with the same seed on every GPU of a cluster, each GPU's medians held "
                             "against its peers' and a GPU more than 2%% off flagged on the pages (default auto: "
                             "the quickest file known, on a cluster of two or more GPUs)")
    parser.add_argument("--submissions", default=str(DEFAULT_SUBMISSIONS),
                        help=f"folder of <problem>/*.py files (default: {DEFAULT_SUBMISSIONS})")
    _one_line_error(parser)
    parser.set_defaults(handler=handle)
