"""The job table: a submission row moves queued -> running -> done, and never backwards except
on start, when rows a stopped service left 'running' go back to 'queued' (run again, once).

Every function takes the connection and does one statement or one transaction; the caller holds
the service's lock (``ServiceDb.locked``).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from harness.sqlite_migrations import utc_now


@dataclass(frozen=True)
class Job:
    id: int
    user_id: int
    user_name: str
    problem: str
    mode: str
    filename: str
    source: bytes
    status: str
    attempts: int
    created_at: str
    started_at: str | None
    finished_at: str | None
    run_id: int | None
    result: dict[str, Any] | None


_COLUMNS = ("s.id, s.user_id, u.name, s.problem, s.mode, s.filename, s.source, s.status, s.attempts, "
            "s.created_at, s.started_at, s.finished_at, s.run_id, s.result_json")
_FROM = "FROM submissions s JOIN users u ON u.id = s.user_id"


def _job(row: tuple[Any, ...]) -> Job:
    *head, result_json = row
    return Job(*head, result=json.loads(result_json) if result_json else None)


def enqueue(connection: sqlite3.Connection, *, user_id: int, problem: str, mode: str, filename: str,
            source: bytes) -> int:
    with connection:
        cursor = connection.execute(
            "INSERT INTO submissions (user_id, problem, mode, filename, source, sha256, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (user_id, problem, mode, filename, source, hashlib.sha256(source).hexdigest(), utc_now()))
    return int(cursor.lastrowid)


def get(connection: sqlite3.Connection, job_id: int) -> Job | None:
    row = connection.execute(f"SELECT {_COLUMNS} {_FROM} WHERE s.id = ?", (job_id,)).fetchone()
    return _job(row) if row else None


def of_user(connection: sqlite3.Connection, user_id: int) -> list[Job]:
    rows = connection.execute(f"SELECT {_COLUMNS} {_FROM} WHERE s.user_id = ? ORDER BY s.id", (user_id,))
    return [_job(row) for row in rows]


def queue_position(connection: sqlite3.Connection, job: Job) -> int | None:
    """1 for the next job to start; None once it has started."""
    if job.status != "queued":
        return None
    row = connection.execute("SELECT COUNT(*) FROM submissions WHERE status = 'queued' AND id <= ?",
                             (job.id,)).fetchone()
    return int(row[0])


def take_next(connection: sqlite3.Connection) -> Job | None:
    """The oldest queued job, now marked running (one more attempt)."""
    row = connection.execute("SELECT id FROM submissions WHERE status = 'queued' ORDER BY id LIMIT 1").fetchone()
    if row is None:
        return None
    with connection:
        taken = connection.execute("UPDATE submissions SET status = 'running', started_at = ?, "
                                   "attempts = attempts + 1 WHERE id = ? AND status = 'queued'", (utc_now(), row[0]))
    return get(connection, row[0]) if taken.rowcount == 1 else None


def release(connection: sqlite3.Connection, job_id: int) -> None:
    """A job the executor would not take goes back to the queue; that was no attempt."""
    with connection:
        connection.execute("UPDATE submissions SET status = 'queued', started_at = NULL, attempts = attempts - 1 "
                           "WHERE id = ? AND status = 'running'", (job_id,))


def finish(connection: sqlite3.Connection, job_id: int, result: dict[str, Any]) -> bool:
    """Store a running job's result; False when it is not running (a duplicate answer is dropped)."""
    with connection:
        cursor = connection.execute("UPDATE submissions SET status = 'done', finished_at = ?, result_json = ? "
                                    "WHERE id = ? AND status = 'running'", (utc_now(), json.dumps(result), job_id))
    return cursor.rowcount == 1


def link_run(connection: sqlite3.Connection, job_id: int, run_id: int) -> None:
    with connection:
        connection.execute("UPDATE submissions SET run_id = ? WHERE id = ?", (run_id, job_id))


def board_path(job: Job) -> str:
    """The job's file as the leaderboard names it: under the user's name, never the file's claim."""
    return f"{job.user_name}/{job.filename}"


def stored_run(connection: sqlite3.Connection, job: Job, sha256: str, started_at: str | None) -> int | None:
    """The leaderboard run already stored for this job, if a stop came between storing and linking it."""
    row = connection.execute("SELECT id FROM runs WHERE sha256 = ? AND author = ? AND submission_path = ? "
                             "AND started_at IS ? ORDER BY id DESC LIMIT 1",
                             (sha256, job.user_name, board_path(job), started_at)).fetchone()
    return int(row[0]) if row else None


def unranked_leaderboard_jobs(connection: sqlite3.Connection) -> list[Job]:
    """Finished leaderboard-mode jobs whose run is not in the leaderboard's table yet (a stop in between)."""
    rows = connection.execute(f"SELECT {_COLUMNS} {_FROM} WHERE s.status = 'done' AND s.mode = 'leaderboard' "
                              "AND s.run_id IS NULL ORDER BY s.id")
    return [_job(row) for row in rows]


def requeue_running(connection: sqlite3.Connection) -> int:
    """On start: jobs a stopped service was running go back to the queue; returns how many."""
    with connection:
        cursor = connection.execute("UPDATE submissions SET status = 'queued', started_at = NULL "
                                    "WHERE status = 'running'")
    return cursor.rowcount


def count_since(connection: sqlite3.Connection, user_id: int, hours: float) -> int:
    since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=hours)).isoformat(
        timespec="seconds")
    row = connection.execute("SELECT COUNT(*) FROM submissions WHERE user_id = ? AND created_at > ?",
                             (user_id, since)).fetchone()
    return int(row[0])


def count_unfinished(connection: sqlite3.Connection, user_id: int) -> int:
    row = connection.execute("SELECT COUNT(*) FROM submissions WHERE user_id = ? AND status != 'done'",
                             (user_id,)).fetchone()
    return int(row[0])
