"""``python -m harness review``: re-check a leaderboard's top entries before prizes (harness/review/).

Exit codes: 0 when the review completed (whatever its verdicts: they are in the table, the JSON,
the database and the pages), 113 for a bad argument or database (one line, no traceback), 110 when
--device cuda finds no GPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from harness.contract.results import ExitCode
from harness.leaderboard import render
from harness.leaderboard.rank import build_board
from harness.leaderboard.store import Store, StoreError
from harness.review import dynamic_checks, entry_review, kernelguard_rules, review_page, review_store

DEFAULT_DB = Path("results/leaderboard.db")
DEFAULT_OUT = Path("results/leaderboard")


class UsageError(Exception):
    """A bad argument; the message is the one line the organizer sees."""


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def problems_to_review(store: Store, requested: str | None, db: str) -> list[str]:
    from harness.contract.task_spec import contest_problems

    stored = store.problems()
    if requested is None:
        if not stored:
            raise UsageError(f"{db} holds no runs: run python -m harness leaderboard first")
        return stored
    if requested not in contest_problems():
        raise UsageError(f"unknown problem '{requested}': choose one of {', '.join(contest_problems())}")
    if requested not in stored:
        raise UsageError(f"{db} has no runs of {requested}: run python -m harness leaderboard --problem {requested}")
    return [requested]


def options_from(args: argparse.Namespace) -> entry_review.ReviewOptions:
    if args.top < 1:
        raise UsageError(f"--top must be 1 or more, got {args.top}")
    roots = tuple(Path(p) for p in args.import_path)
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"--import-path {root}: no such folder")
    try:
        skip = entry_review.checks_named([n for n in (args.skip or "").split(",") if n])
    except ValueError as error:
        raise UsageError(f"--skip: {error}") from None
    return entry_review.ReviewOptions(args.top, roots, skip, kernelguard_rules.load())


def open_store(db: str) -> Store:
    if not Path(db).is_file():
        raise UsageError(f"no leaderboard database at {db}: run python -m harness leaderboard first, or pass --db")
    return Store.open(db)


def handle(args: argparse.Namespace) -> int:
    try:
        options = options_from(args)
        store = open_store(args.db)
    except (UsageError, StoreError) as error:
        say(f"review: error: {error}")
        return int(ExitCode.BAD_INPUT)
    with store:
        try:
            problems = problems_to_review(store, args.problem, args.db)
            device = dynamic_checks.setup(args.device, args.gpu, lambda line: say(f"      {line}"))
        except UsageError as error:
            say(f"review: error: {error}")
            return int(ExitCode.BAD_INPUT)
        except dynamic_checks.NoGpuError as error:
            say(f"review: error: {error}")
            return int(ExitCode.CUDA_FAILURE)
        notes = [device.why_not] if device.why_not else []
        for note in notes:
            say(f"review: {note}")
        boards = {p: build_board(p, store.runs(p)) for p in store.problems()}
        reviews = []
        for problem in problems:
            found = entry_review.review_board(boards[problem], store.connection, options, device, say)
            if not found:
                say(f"review: {problem}: no ranked entry to review")
            reviews += found
        review_store.save(store.connection, reviews)
        reviewed = review_store.reviewed_problems(store.connection)
    generated_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = Path(args.out)
    for problem in problems:
        review_page.write_page(out, problem, [r for r in reviews if r.problem == problem], generated_at)
    render.write_site(list(boards.values()), out, generated_at, reviewed)  # the boards' pages link their reviews
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(review_page.review_json(reviews, generated_at, notes), indent=2) + "\n")
    print("\n".join(review_page.terminal_lines(reviews, notes)))
    say(f"review: {len(reviews)} entr{'y' if len(reviews) == 1 else 'ies'} reviewed; pages under {out}/"
        + (f"; JSON {args.json}" if args.json else ""))
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "review", help="re-check a leaderboard's top entries before prizes",
        description="For the top N entries of each problem's board: a static read of the source and its local "
                    "modules (our rules and kernelguard's), the physics floor per shape, and on a GPU a fresh "
                    "ranked run with a new secret seed, Nsight Compute's clock beside the harness's, and sanitize "
                    "mode. A verdict per entry (clean, look here, reproduces not) goes to the terminal, the "
                    "database, <out>/<problem>/review.html and --json.")
    parser.add_argument("--top", type=int, default=entry_review.DEFAULT_TOP,
                        help=f"entries per problem, best first (default: {entry_review.DEFAULT_TOP})")
    parser.add_argument("--problem", help="only this problem (default: every problem in the database)")
    parser.add_argument("--db", default=str(DEFAULT_DB),
                        help=f"the leaderboard's SQLite database (default: {DEFAULT_DB})")
    parser.add_argument("--out", default=str(DEFAULT_OUT),
                        help=f"the leaderboard's pages, where review.html goes beside them (default: {DEFAULT_OUT})")
    parser.add_argument("--json", help="also write the review as JSON to this file")
    parser.add_argument("--device", choices=("cpu", "cuda"),
                        help="cuda: run the dynamic checks (default when a GPU is visible); cpu: static read and "
                             "physics floor only")
    parser.add_argument("--gpu", help="the GPU index of the fresh runs (default: the last of several)")
    parser.add_argument("--import-path", action="append", default=[], metavar="DIR",
                        help="another folder where submissions' local imports are found (the worker's PYTHONPATH); "
                             "repeatable")
    parser.add_argument("--skip", metavar="CHECK,...",
                        help=f"checks to leave out: {', '.join(entry_review.ALL_CHECKS)}")
    parser.set_defaults(handler=handle)
