"""A leaderboard run's ledger: the entries it planned, which have their result, and resuming it.

Why: an organizer's run can stop anywhere (Ctrl-C, the organizer's process killed, a lost
cluster). With the ledger the pages list every planned entry exactly once, ranked or listed, or
as not run; and the next command with the same scope resumes the run, evaluating only the
entries without a result. Each entry's result is stored under the entry's ``run_key``, which
``runs`` keeps unique (migration 0004), so a retried or resubmitted job cannot be stored twice.
A harness failure is stored without the key: it is the harness's record, not the entry's result,
and the entry is run again.

Functions take the store's connection and do one statement or one transaction each; the caller
is the store's one writer.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from harness.contract.results import RunResult
from harness.sqlite_migrations import utc_now


@dataclass(frozen=True)
class Scope:
    """What a resumed run must share with the stopped one (another device or --force is another run)."""

    device_name: str
    harness_version: str
    problems: tuple[str, ...]
    force: bool

    def text(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@dataclass(frozen=True)
class Planned:
    """One file to put on the board."""

    problem: str
    submission_path: str
    sha256: str
    author: str


@dataclass(frozen=True)
class Entry:
    run_key: str
    planned: Planned
    run_id: int | None  # its result's run; None: not run yet
    harness_error: bool  # the linked run is a harness failure: the entry is run again

    @property
    def done(self) -> bool:
        return self.run_id is not None and not self.harness_error


def begin(connection: sqlite3.Connection, scope: Scope) -> tuple[int, bool]:
    """(the run's id, resumed): the latest unfinished run of this scope, else a new one."""
    with connection:
        row = connection.execute("SELECT id FROM leaderboard_runs WHERE scope = ? AND state != 'finished' "
                                 "ORDER BY id DESC LIMIT 1", (scope.text(),)).fetchone()
        if row:
            connection.execute("UPDATE leaderboard_runs SET state = 'running' WHERE id = ?", (row[0],))
            return int(row[0]), True
        cursor = connection.execute("INSERT INTO leaderboard_runs (scope, started_at) VALUES (?, ?)",
                                    (scope.text(), utc_now()))
    return int(cursor.lastrowid), False


def entry_key(ledger_run: int, planned: Planned) -> str:
    return f"leaderboard/{ledger_run}/{planned.problem}/{planned.sha256}/{planned.submission_path}"


def plan(connection: sqlite3.Connection, ledger_run: int, files: Iterable[Planned]) -> dict[str, Entry]:
    """Record the run's entries and return them by run key.

    On a resume nothing doubles (the entries are there already); an entry whose result was stored
    but not linked before the stop is linked now; an unfinished entry of a file no longer there
    (removed or changed since) is dropped.
    """
    keyed = {entry_key(ledger_run, p): p for p in files}
    with connection:
        connection.executemany(
            "INSERT OR IGNORE INTO leaderboard_entries (leaderboard_run_id, run_key, problem, submission_path, "
            "sha256, author) VALUES (?, ?, ?, ?, ?, ?)",
            [(ledger_run, key, p.problem, p.submission_path, p.sha256, p.author) for key, p in keyed.items()])
        connection.execute(
            "UPDATE leaderboard_entries SET run_id = (SELECT id FROM runs WHERE runs.run_key = "
            "leaderboard_entries.run_key) WHERE leaderboard_run_id = ? AND EXISTS (SELECT 1 FROM runs WHERE "
            "runs.run_key = leaderboard_entries.run_key)", (ledger_run,))
        stale = [key for key, in connection.execute(
            "SELECT run_key FROM leaderboard_entries WHERE leaderboard_run_id = ? AND run_id IS NULL",
            (ledger_run,)) if key not in keyed]
        connection.executemany("DELETE FROM leaderboard_entries WHERE run_key = ?", [(key,) for key in stale])
    return {entry.run_key: entry for entry in entries(connection, ledger_run) if entry.run_key in keyed}


def entries(connection: sqlite3.Connection, ledger_run: int, problem: str | None = None) -> list[Entry]:
    """The run's entries (of one problem), in path order."""
    rows = connection.execute(
        "SELECT e.run_key, e.problem, e.submission_path, e.sha256, e.author, e.run_id, r.harness_error "
        "FROM leaderboard_entries e LEFT JOIN runs r ON r.id = e.run_id WHERE e.leaderboard_run_id = ? "
        "AND (? IS NULL OR e.problem = ?) ORDER BY e.problem, e.submission_path", (ledger_run, problem, problem))
    return [Entry(key, Planned(p, path, sha, author), run_id, bool(error))
            for key, p, path, sha, author, run_id, error in rows]


def not_run(connection: sqlite3.Connection, ledger_run: int, problem: str | None = None) -> list[Planned]:
    """The entries with no result at all (a harness failure is a result: it is listed as failed)."""
    return [entry.planned for entry in entries(connection, ledger_run, problem) if entry.run_id is None]


def link(connection: sqlite3.Connection, run_key: str, run_id: int) -> None:
    with connection:
        connection.execute("UPDATE leaderboard_entries SET run_id = ? WHERE run_key = ?", (run_id, run_key))


def stored_result(connection: sqlite3.Connection, run_id: int) -> RunResult:
    row = connection.execute("SELECT result_json FROM runs WHERE id = ?", (run_id,)).fetchone()
    return RunResult.from_json(json.loads(row[0]))


def finish(connection: sqlite3.Connection, ledger_run: int, interrupted: bool) -> None:
    """'finished' once every job came back; 'interrupted' otherwise (the next command resumes it)."""
    with connection:
        connection.execute("UPDATE leaderboard_runs SET state = ?, finished_at = ? WHERE id = ?",
                           ("interrupted" if interrupted else "finished", utc_now(), ledger_run))


# -- the per-GPU check's samples ----------------------------------------------------------------
def add_gpu_sample(connection: sqlite3.Connection, ledger_run: int, check_key: str, problem: str, sha256: str,
                   result: RunResult) -> None:
    """One GPU's result of the check file; a second one under the same key is ignored."""
    with connection:
        connection.execute("INSERT OR IGNORE INTO gpu_checks (leaderboard_run_id, check_key, problem, sha256, "
                           "result_json, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
                           (ledger_run, check_key, problem, sha256, json.dumps(result.to_json()), utc_now()))


def gpu_sample_keys(connection: sqlite3.Connection, ledger_run: int) -> set[str]:
    rows = connection.execute("SELECT check_key FROM gpu_checks WHERE leaderboard_run_id = ?", (ledger_run,))
    return {key for key, in rows}


def gpu_samples(connection: sqlite3.Connection, ledger_run: int) -> list[RunResult]:
    rows = connection.execute("SELECT result_json FROM gpu_checks WHERE leaderboard_run_id = ? ORDER BY id",
                              (ledger_run,))
    return [RunResult.from_json(json.loads(text)) for text, in rows]
