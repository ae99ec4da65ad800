"""Review a board's top entries: which entries, and every check on each (static, physics, dynamic).

Which entries: the board's ranked files best first, an author's other files included (a cheat can
sit in a second file that wins tomorrow), the first ``top`` of them. Each is reviewed on its best
stored run, the run that ranks it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.leaderboard.rank import Board, Entry
from harness.leaderboard.store import utc_now
from harness.review import dynamic_checks
from harness.review.dynamic_checks import DeviceSetup, Subject
from harness.review.findings import EntryReview
from harness.review.physics_floor import physics_flags
from harness.review.source_tree import SourceMissing, submission_source
from harness.review.static_read import missing, read_tree

DEFAULT_TOP = 5
STATIC_CHECKS = ("static", "physics")
ALL_CHECKS = (*STATIC_CHECKS, *dynamic_checks.CHECKS)


@dataclass(frozen=True)
class ReviewOptions:
    """What the organizer asked for."""

    top: int = DEFAULT_TOP
    roots: tuple[Path, ...] = ()  # extra folders where a submission's local imports are found
    skip: tuple[str, ...] = ()  # names of ALL_CHECKS
    guard: ModuleType | None = None  # kernelguard, where installed


def top_entries(board: Board, top: int) -> list[Entry]:
    """The board's ranked files (an author's other files too), best score first, the first ``top``."""
    ranked = sorted(board.ranking + board.others, key=lambda e: (e.score_us or 0.0, e.stored.id))
    return ranked[:top]


def review_entry(entry: Entry, board: Board, connection: sqlite3.Connection, options: ReviewOptions,
                 device: DeviceSetup) -> EntryReview:
    """Every check on one entry; what did not run is listed with why."""
    stored = entry.stored
    review = EntryReview(board.problem, stored.id, entry.rank, stored.author, stored.submission_path, stored.sha256,
                         entry.score_us, reviewed_at=utc_now())
    review.not_run += [f"{check}: skipped (--skip)" for check in STATIC_CHECKS if check in options.skip]
    try:
        source = submission_source(stored.submission_path, stored.sha256, connection)
    except SourceMissing as error:
        source, read = None, missing(stored.submission_path, error)
    else:
        read = read_tree(source, options.roots, options.guard) if "static" not in options.skip else None
    if read is not None:
        review.flags += read.flags
        review.files, review.not_run = read.files, review.not_run + read.not_run
    if "physics" not in options.skip:
        flags, notes = physics_flags(entry.result, "stored run")
        review.flags += flags
        review.not_run += notes
    if source is None:
        review.not_run.append("dynamic checks: not run (the entry's bytes are not at hand)")
        return review
    others = [e.score_us for e in board.ranking if e.score_us is not None and e.stored.id != stored.id]
    subject = Subject(board.problem, Path(stored.submission_path).name, source.data, entry.result,
                      stored.device_name, entry.rank, others)
    flags, notes, review.rerun = dynamic_checks.run_checks(device, subject, options.skip)
    review.flags += flags
    review.not_run += notes
    return review


def review_board(board: Board, connection: sqlite3.Connection, options: ReviewOptions, device: DeviceSetup,
                 progress: Callable[[str], None] = print) -> list[EntryReview]:
    """The board's top entries, each reviewed; a progress line per entry."""
    entries = top_entries(board, options.top)
    reviews = []
    for position, entry in enumerate(entries, 1):
        progress(f"[{position}/{len(entries)}] {board.problem}: {entry.stored.submission_path} ...")
        review = review_entry(entry, board, connection, options, device)
        progress(f"[{position}/{len(entries)}] {board.problem}: {entry.stored.submission_path}: "
                 f"{review.verdict.value} ({len(review.flags)} flag(s))")
        reviews.append(review)
    return reviews


def checks_named(names: Sequence[str]) -> tuple[str, ...]:
    """--skip's value checked against ALL_CHECKS; ValueError names the choices."""
    unknown = [n for n in names if n not in ALL_CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {', '.join(unknown)}: choose from {', '.join(ALL_CHECKS)}")
    return tuple(names)
