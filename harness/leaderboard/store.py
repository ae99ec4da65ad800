"""A thin SQLite store of leaderboard runs; the schema lives in numbered migration files.

The database outlives harness versions (it sits on the organizer's runner): its schema moves
forward by this package's migrations/ (harness.sqlite_migrations), recorded in ``schema_version``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.contract.results import RunResult
from harness.sqlite_migrations import (
    VERSION_TABLE,
    StoreError,
    apply_migrations,
    create_version_table,
    schema_version,
    utc_now,
)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


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


SERVICE_VERSION_TABLE = "service_schema_version"
_SERVICE_ROWS = {(3, "service"): 1, (4, "user_revocation"): 2}
"""Before the service had migrations of its own (harness/service/migrations), its tables were this
store's versions 3 and 4. In such a database those rows are handed over, renumbered, to the
service's version table (harness.service.db), so that this store's own next migration 3 is not
taken for applied."""


def _hand_over_service_rows(connection: sqlite3.Connection) -> None:
    create_version_table(connection)
    pairs = " OR ".join("(version = ? AND name = ?)" for _ in _SERVICE_ROWS)
    flat = [value for pair in _SERVICE_ROWS for value in pair]
    if not connection.execute(f"SELECT 1 FROM {VERSION_TABLE} WHERE {pairs}", flat).fetchone():
        return
    create_version_table(connection, SERVICE_VERSION_TABLE)
    connection.execute("BEGIN IMMEDIATE")  # another process may be handing them over at the same time
    try:
        rows = connection.execute(f"SELECT version, name, applied_at FROM {VERSION_TABLE} WHERE {pairs}",
                                  flat).fetchall()
        connection.executemany(f"INSERT INTO {SERVICE_VERSION_TABLE} VALUES (?, ?, ?)",
                               [(_SERVICE_ROWS[(version, name)], name, at) for version, name, at in rows])
        connection.execute(f"DELETE FROM {VERSION_TABLE} WHERE {pairs}", flat)
        connection.commit()
    except sqlite3.Error:
        connection.rollback()
        raise


def migrate(connection: sqlite3.Connection, migrations: Path = MIGRATIONS_DIR) -> None:
    """This store's tables, brought up to date (an older database's service rows handed over first)."""
    _hand_over_service_rows(connection)
    apply_migrations(connection, migrations)


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
            migrate(connection, migrations)
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
            device_name: str, harness_error: bool = False, recorded_at: str | None = None,
            run_key: str | None = None) -> int:
        """Store one run and its cases; return the run's id.

        ``run_key`` names the job this run is the result of (a leaderboard entry, a service job):
        a second run under the same key is not stored, its first run's id comes back instead.
        """
        if run_key is not None and (existing := _keyed_run(self.connection, run_key)) is not None:
            return existing
        try:
            return self._insert(run, problem, submission_path, sha256, author, device_name, harness_error,
                                recorded_at, run_key)
        except sqlite3.IntegrityError:  # another process stored this key between the lookup and the insert
            if run_key is None or (existing := _keyed_run(self.connection, run_key)) is None:
                raise
            return existing

    def _insert(self, run: RunResult, problem: str, submission_path: str, sha256: str, author: str,
                device_name: str, harness_error: bool, recorded_at: str | None, run_key: str | None) -> int:
        device = run.device or {}
        with self.connection:
            cursor = self.connection.execute(
                "INSERT INTO runs (problem, submission_path, sha256, author, device_name, device_json, "
                "sm_clock_mhz, max_sm_clock_mhz, mem_clock_mhz, harness_version, mode, status, reason, rankable, "
                "harness_error, started_at, recorded_at, elapsed_s, geomean_us, geomean_pct_of_sol, result_json, "
                "run_key) VALUES (" + ", ".join("?" * 22) + ")",
                (problem, submission_path, sha256, author, device_name, json.dumps(device),
                 _number(device.get("sm_clock_mhz")), _number(device.get("max_sm_clock_mhz")),
                 _number(device.get("mem_clock_mhz")), run.harness_version, run.mode, run.status.value,
                 run.reason, int(run.rankable), int(harness_error), run.started_at,
                 recorded_at or utc_now(), run.elapsed_s, run.geomean_us, run.geomean_pct_of_sol,
                 json.dumps(run.to_json()), run_key),
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


def _keyed_run(connection: sqlite3.Connection, run_key: str) -> int | None:
    """The id of the run stored under this key, if any."""
    row = connection.execute("SELECT id FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    return int(row[0]) if row else None


_COLUMNS = "id, problem, submission_path, sha256, author, device_name, recorded_at, harness_error, result_json"


def _stored(row: tuple[Any, ...]) -> StoredRun:
    run_id, problem, path, sha256, author, device_name, recorded_at, harness_error, result_json = row
    return StoredRun(run_id, problem, path, sha256, author, device_name, recorded_at, bool(harness_error),
                     RunResult.from_json(json.loads(result_json)))

