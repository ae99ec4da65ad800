"""A thin SQLite store of leaderboard runs; the schema lives in numbered migration files.

Why migrations: the database outlives harness versions (it sits on the organizer's runner), so
the schema only ever moves forward by files applied in order, each recorded in
``schema_version``; opening a database applies the ones it lacks and nothing else.
"""

from __future__ import annotations

import datetime
import json
import re
import sqlite3
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from harness.contract.results import CaseResult, RunResult, TimingStats

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class StoreError(Exception):
    """The database or a migration file is unusable; the message names it."""


@dataclass(frozen=True)
class StoredRun:
    """One stored evaluation: the RunResult plus what the leaderboard adds to it."""

    id: int
    problem: str
    submission_path: str
    sha256: str
    author: str
    device_name: str
    recorded_at: str
    harness_error: bool
    result: RunResult


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[tuple[int, str, Path]]:
    """(version, name, path) of every migration, in order; a gap or a duplicate is an error."""
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if not match:
            raise StoreError(f"{path}: migration files are named NNNN_name.sql (lower case)")
        found.append((int(match.group(1)), match.group(2), path))
    versions = [version for version, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise StoreError(f"{directory}: migrations must be numbered 1, 2, 3... without gaps, found {versions}")
    return found


def schema_version(connection: sqlite3.Connection) -> int:
    row = connection.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def sql_statements(script: str) -> list[str]:
    """A migration file's statements, one each.

    Why not executescript: it commits first, which would drop the write lock the migration
    holds. sqlite3.complete_statement keeps a ';' inside a string, comment or trigger body.
    """
    statements, buffer = [], ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\r\n;"):
                statements.append(buffer)
            buffer = ""
    if buffer.strip(" \t\r\n;"):
        statements.append(buffer)  # incomplete: let SQLite say what is wrong with it
    return statements


def _create_version_table(connection: sqlite3.Connection) -> None:
    """schema_version, created under the write lock (a file that is not a database fails here)."""
    if connection.in_transaction:
        connection.commit()
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        connection.commit()
    except sqlite3.Error:
        connection.rollback()
        raise


def _apply(connection: sqlite3.Connection, version: int, name: str, path: Path) -> bool:
    """Apply one migration and its version row in one transaction; False when already there.

    Why the lock first: several processes may open a new database at once. Each takes the write
    lock (BEGIN IMMEDIATE) and only then reads the version, so a file is applied exactly once.
    """
    statements = sql_statements(path.read_text())
    try:
        connection.execute("BEGIN IMMEDIATE")
        if schema_version(connection) >= version:
            connection.rollback()
            return False
        for statement in statements:
            connection.execute(statement)
        connection.execute("INSERT INTO schema_version VALUES (?, ?, ?)", (version, name, utc_now()))
        connection.commit()
    except sqlite3.Error as error:
        connection.rollback()
        raise StoreError(f"{path}: migration failed: {error}") from None
    return True


def apply_migrations(connection: sqlite3.Connection, directory: Path = MIGRATIONS_DIR) -> list[int]:
    """Apply the migrations newer than the database, each in its own transaction; return them."""
    files = migration_files(directory)
    _create_version_table(connection)
    return [version for version, name, path in files if _apply(connection, version, name, path)]


def _number(value: Any) -> float | None:
    """A clock as nvidia-smi reports it ('1980', '[N/A]') as a number, or None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class Store:
    """Runs in, runs out. Use from one thread (the runner stores from its main thread)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    @classmethod
    def open(cls, path: str | Path, migrations: Path = MIGRATIONS_DIR) -> Store:
        path = Path(path)
        try:
            if str(path) != ":memory:":
                path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(path))
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"{path}: cannot open the database ({error})") from None
        connection.execute("PRAGMA foreign_keys = ON")
        try:
            apply_migrations(connection, migrations)
        except sqlite3.DatabaseError as error:
            connection.close()
            raise StoreError(f"{path}: not a leaderboard database ({error})") from None
        return cls(connection)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        return schema_version(self.connection)

    def add(self, run: RunResult, *, problem: str, submission_path: str, sha256: str, author: str,
            device_name: str, harness_error: bool = False, recorded_at: str | None = None) -> int:
        """Store one run and its cases; return the run's id."""
        device = run.device or {}
        with self.connection:
            cursor = self.connection.execute(
                "INSERT INTO runs (problem, submission_path, sha256, author, device_name, device_json, "
                "sm_clock_mhz, max_sm_clock_mhz, mem_clock_mhz, harness_version, mode, status, reason, rankable, "
                "harness_error, started_at, recorded_at, elapsed_s, geomean_us, geomean_pct_of_sol, result_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (problem, submission_path, sha256, author, device_name, json.dumps(device),
                 _number(device.get("sm_clock_mhz")), _number(device.get("max_sm_clock_mhz")),
                 _number(device.get("mem_clock_mhz")), run.harness_version, run.mode, run.status.value,
                 run.reason, int(run.rankable), int(harness_error), run.started_at,
                 recorded_at or utc_now(), run.elapsed_s, run.geomean_us, run.geomean_pct_of_sol,
                 json.dumps(run.to_json())),
            )
            run_id = int(cursor.lastrowid)
            self.connection.executemany(
                "INSERT INTO cases (run_id, position, kind, case_json, status, reason, median_us, mean_us, std_us, "
                "min_us, max_us, runs, method, sol_us, pct_of_sol) VALUES (" + ", ".join("?" * 15) + ")",
                [
                    (run_id, position, case.kind, json.dumps(case.case), case.status.value, case.reason,
                     *((t.median_us, t.mean_us, t.std_us, t.min_us, t.max_us, t.runs, t.method)
                       if (t := case.timing) else (None,) * 7),
                     case.sol_us, case.pct_of_sol)
                    for position, case in enumerate(run.cases)
                ],
            )
        return run_id

    def cached(self, *, problem: str, sha256: str, device_name: str, harness_version: str) -> StoredRun | None:
        """The latest run of this exact file on this device and harness version, if any.

        Runs where the evaluator itself raised are not the file's fault, so they never count.
        """
        row = self.connection.execute(
            f"SELECT {_COLUMNS} FROM runs WHERE problem = ? AND sha256 = ? AND device_name = ? "
            "AND harness_version = ? AND harness_error = 0 ORDER BY id DESC LIMIT 1",
            (problem, sha256, device_name, harness_version),
        ).fetchone()
        return _stored(row) if row else None

    def runs(self, problem: str | None = None) -> list[StoredRun]:
        """Every stored run (of one problem), oldest first."""
        where, params = ("WHERE problem = ?", (problem,)) if problem else ("", ())
        rows = self.connection.execute(f"SELECT {_COLUMNS} FROM runs {where} ORDER BY id", params).fetchall()
        return [_stored(row) for row in rows]

    def problems(self) -> list[str]:
        return [row[0] for row in self.connection.execute("SELECT DISTINCT problem FROM runs ORDER BY problem")]


_COLUMNS = "id, problem, submission_path, sha256, author, device_name, recorded_at, harness_error, result_json"


def _stored(row: tuple[Any, ...]) -> StoredRun:
    run_id, problem, path, sha256, author, device_name, recorded_at, harness_error, result_json = row
    return StoredRun(run_id, problem, path, sha256, author, device_name, recorded_at, bool(harness_error),
                     load_result(json.loads(result_json)))


def _known(record: dict[str, Any], kind: type) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    return {key: value for key, value in record.items() if key in names}


def load_result(record: dict[str, Any]) -> RunResult:
    """RunResult.from_json, keeping only the fields this harness version knows.

    The database outlives harness versions: a field an older or newer harness wrote must not
    make its runs unreadable.
    """
    cases = []
    for case in record.get("cases", []):
        case = _known(case, CaseResult)
        if case.get("timing"):
            case["timing"] = _known(case["timing"], TimingStats)
        cases.append(case)
    return RunResult.from_json({**_known(record, RunResult), "cases": cases})
