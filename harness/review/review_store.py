"""Reviews in the leaderboard's own database (migration 0003_reviews.sql): saved per batch, read back."""

from __future__ import annotations

import json
import sqlite3

from harness import __version__
from harness.review.findings import EntryReview


def save(connection: sqlite3.Connection, reviews: list[EntryReview]) -> int:
    """Store one review command's entries as a new batch, flags in their own table; return the batch."""
    with connection:
        batch = int(connection.execute("SELECT COALESCE(MAX(batch), 0) + 1 FROM reviews").fetchone()[0])
        for review in reviews:
            cursor = connection.execute(
                "INSERT INTO reviews (batch, run_id, problem, rank, author, submission_path, sha256, score_us, "
                "verdict, not_run, harness_version, reviewed_at, review_json) VALUES (" + ", ".join("?" * 13) + ")",
                (batch, review.run_id, review.problem, review.rank, review.author, review.submission, review.sha256,
                 review.score_us, review.verdict.value, "\n".join(review.not_run), __version__, review.reviewed_at,
                 json.dumps(review.to_json())))
            connection.executemany(
                "INSERT INTO review_flags (review_id, position, class, file, line, evidence, rule) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(cursor.lastrowid, position, f.klass.value, f.file, f.line, f.evidence, f.rule)
                 for position, f in enumerate(review.flags)])
    return batch


def latest(connection: sqlite3.Connection, problem: str) -> list[EntryReview]:
    """The problem's latest batch of reviews, in the order they were made."""
    rows = connection.execute(
        "SELECT review_json FROM reviews WHERE problem = ? AND batch = "
        "(SELECT MAX(batch) FROM reviews WHERE problem = ?) ORDER BY id", (problem, problem)).fetchall()
    return [EntryReview.from_json(json.loads(row[0])) for row in rows]


def reviewed_problems(connection: sqlite3.Connection) -> set[str]:
    """Problems with at least one review (their leaderboard page links the review page)."""
    return {row[0] for row in connection.execute("SELECT DISTINCT problem FROM reviews")}
